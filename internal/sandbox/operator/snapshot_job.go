package operator

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// The snapshot Job's shape, as the operator builds it
// (controllers/snapshot_job.go upstream).
const (
	snapshotJobTTLSeconds   int32 = 600
	snapshotJobBackoffLimit int32 = 3
	snapshotAgentContainer        = "snapshot-agent"
	snapshotAgentUID        int64 = 65532
	standInImage                  = "sandbox.invalid/etcd-operator:stand-in"
	snapshotAgentLabel            = "sandbox.etcd-operator.cozystack.io/agent"
	snapshotAgentLabelValue       = "snapshot"
)

// Environment the snapshot agent reads (names as upstream).
const (
	envEndpoints      = "ETCD_ENDPOINTS"
	envSnapshotName   = "SNAPSHOT_NAME"
	envSnapshotUID    = "SNAPSHOT_UID"
	envDestKind       = "SNAPSHOT_DEST_KIND"
	envS3Endpoint     = "S3_ENDPOINT"
	envS3Bucket       = "S3_BUCKET"
	envS3Key          = "S3_KEY"
	envS3Region       = "S3_REGION"
	envS3PathStyle    = "S3_FORCE_PATH_STYLE"
	envAccessKeyID    = objstore.AccessKeyIDKey
	envSecretAccesKey = objstore.SecretAccessKeyKey
)

func snapshotJobName(s *etcdv1alpha2.EtcdSnapshot) string { return s.Name + "-snapshot" }

// clientServiceHost is the name the agent dials: the cluster's client
// Service, which the kubelet stand-in resolves to the live members.
func clientServiceHost(c *etcdv1alpha2.EtcdCluster) string {
	return fmt.Sprintf("%s-client.%s.svc", c.Name, c.Namespace)
}

// buildSnapshotJob is the Job that streams one snapshot: configured only
// through its environment, its S3 keys read from the credentials Secret by
// non-optional secretKeyRefs, so a missing Secret keeps its Pod from
// starting until the Job's deadline.
func buildSnapshotJob(s *etcdv1alpha2.EtcdSnapshot, c *etcdv1alpha2.EtcdCluster, deadline time.Duration) *batchv1.Job {
	env := []corev1.EnvVar{
		{Name: envEndpoints, Value: "http://" + clientServiceHost(c) + ":2379"},
		{Name: envSnapshotName, Value: s.Name},
		{Name: envSnapshotUID, Value: string(s.UID)},
	}
	if dst := s.Spec.Destination.S3; dst != nil {
		ref := func(key string) *corev1.EnvVarSource {
			return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: dst.CredentialsSecretRef, Key: key,
			}}
		}
		env = append(env,
			corev1.EnvVar{Name: envDestKind, Value: "s3"},
			corev1.EnvVar{Name: envS3Endpoint, Value: dst.Endpoint},
			corev1.EnvVar{Name: envS3Bucket, Value: dst.Bucket},
			corev1.EnvVar{Name: envS3Key, Value: dst.Key},
			corev1.EnvVar{Name: envS3Region, Value: dst.Region},
			corev1.EnvVar{Name: envS3PathStyle, Value: fmt.Sprintf("%t", dst.ForcePathStyle)},
			corev1.EnvVar{Name: envAccessKeyID, ValueFrom: ref(envAccessKeyID)},
			corev1.EnvVar{Name: envSecretAccesKey, ValueFrom: ref(envSecretAccesKey)},
		)
	} else {
		env = append(env, corev1.EnvVar{Name: envDestKind, Value: "pvc"})
	}
	labels := map[string]string{etcdmember.ClusterLabel: c.Name}
	podLabels := map[string]string{etcdmember.ClusterLabel: c.Name, snapshotAgentLabel: snapshotAgentLabelValue}
	ttl, backoff := snapshotJobTTLSeconds, snapshotJobBackoffLimit
	activeDeadline := int64(deadline / time.Second)
	noToken, nonRoot, uid := false, true, snapshotAgentUID
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: snapshotJobName(s), Labels: labels},
		Spec: batchv1.JobSpec{
			TTLSecondsAfterFinished: &ttl,
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &activeDeadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &noToken,
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot, RunAsUser: &uid},
					Containers: []corev1.Container{{
						Name:    snapshotAgentContainer,
						Image:   standInImage,
						Command: []string{"/manager", "snapshot-agent"},
						Env:     env,
					}},
				},
			},
		},
	}
}
