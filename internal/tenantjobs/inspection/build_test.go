package inspection

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

func spec() Spec {
	return Spec{
		Namespace: "tenant", BackupName: "b1", BackupUID: "uid-1", Image: "driver:v1",
		Object: stagingstep.Object{Endpoint: "https://s3.example", Bucket: "b", Key: "tenant/etcd/a.db", Region: "eu-1", PathStyle: true,
			SecretName: "s3", Size: 1 << 20, SHA256: "sha256:" + strings.Repeat("a", 64)},
		Deadline: 10 * time.Minute, AllowedEndpointCIDRs: []string{"10.0.0.0/8"}, AllowHTTP: true, CAPEM: "-----BEGIN CERTIFICATE-----",
	}
}

// The container's command line is the subcommand and the flags that
// `etcd-stage inspect` parses back into the recorded facts.
func TestArgumentsParseBackIntoTheRecordedFacts(t *testing.T) {
	job := Build(spec())
	c := job.Spec.Template.Spec.Containers[0]
	if !reflect.DeepEqual(c.Command, []string{"/etcd-stage"}) || c.Args[0] != step.Subcommand {
		t.Fatalf("command %q, args %q", c.Command, c.Args)
	}
	o, err := step.Parse(c.Args[1:], io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := step.Options{Source: stagingstep.Source{Endpoint: "https://s3.example", Bucket: "b", Key: "tenant/etcd/a.db", Region: "eu-1", PathStyle: true,
		Size: 1 << 20, SHA256: strings.Repeat("a", 64), AllowedEndpointCIDRs: []string{"10.0.0.0/8"}, AllowHTTP: true},
		WorkDir: WorkDir, TerminationLog: report.TerminationLog}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("parsed %+v\nwant   %+v", o, want)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		} else {
			env[e.Name] = e.Value
		}
	}
	if env[s3object.AccessKeyIDKey] != "s3/"+s3object.AccessKeyIDKey || env[s3object.SecretAccessKeyKey] != "s3/"+s3object.SecretAccessKeyKey || env["S3_CA_PEM"] == "" {
		t.Fatalf("env %v", env)
	}
}

// The Job is bounded and least-privileged, writes only to its emptyDir,
// and a refusal ends it at once.
func TestJobIsBoundedAndUnprivileged(t *testing.T) {
	job := Build(spec())
	if job.Namespace != "tenant" || job.Name != Name("uid-1") || job.Labels[backupsv1alpha1.InspectionLabel] != "uid-1" ||
		job.Spec.Template.Labels[backupsv1alpha1.InspectionLabel] != "uid-1" || job.Labels["app.kubernetes.io/name"] != "etcd-inspection" {
		t.Fatalf("name %s, labels %v", job.Name, job.Labels)
	}
	if refs := job.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Backup" || refs[0].UID != "uid-1" || *refs[0].Controller || *refs[0].BlockOwnerDeletion {
		t.Fatalf("owner references %+v", refs)
	}
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "" {
		t.Fatal("service account token mounted")
	}
	psc := pod.SecurityContext
	if !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context %+v", psc)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.Privileged || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("container security context %+v", sc)
	}
	if c.Resources.Limits.Memory().String() != "512Mi" || c.Resources.Limits.Cpu().IsZero() {
		t.Fatalf("limits %v", c.Resources.Limits)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].EmptyDir == nil || pod.Volumes[0].PersistentVolumeClaim != nil {
		t.Fatalf("volumes %+v", pod.Volumes)
	}
	if got := pod.Volumes[0].EmptyDir.SizeLimit.Value(); got != 1<<20+64<<20 {
		t.Fatalf("emptyDir size limit %d", got)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != WorkDir || c.VolumeMounts[0].Name != pod.Volumes[0].Name {
		t.Fatalf("mounts %+v", c.VolumeMounts)
	}
	if *job.Spec.BackoffLimit != 2 || *job.Spec.ActiveDeadlineSeconds != 600 || *job.Spec.TTLSecondsAfterFinished != 86400 {
		t.Fatalf("backoff %d, deadline %d, ttl %d", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds, *job.Spec.TTLSecondsAfterFinished)
	}
	rules := job.Spec.PodFailurePolicy.Rules
	if len(rules) != 2 || rules[0].Action != batchv1.PodFailurePolicyActionFailJob || !reflect.DeepEqual(rules[0].OnExitCodes.Values, []int32{65}) ||
		rules[1].Action != batchv1.PodFailurePolicyActionIgnore || rules[1].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Fatalf("pod failure policy %+v", rules)
	}
}
