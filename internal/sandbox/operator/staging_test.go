package operator_test

// The sandbox's part of a staged restore (issue 17): the driver's staging
// Job runs on the kubelet stand-in as real processes against the real Job
// controller, and the operator stand-in restores from the staged file on a
// claim (spec.bootstrap.restore.source.pvc).

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Upstream: the operator mounts the source claim read-only at /restore/src
// and restores Join(/restore/src, subPath) with etcdutl, hash check
// skipped. The seed waits while the claim does not exist; the claim's
// folder goes when the claim is deleted.
func TestRestoreFromClaimBootsFromTheFile(t *testing.T) {
	src := newTenant(t)
	sc := src.awaitHealthy(src.cluster("etcd", 1))
	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(sc))...)
	src.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	data := kvdata.Set{Prefix: "/staged", N: 300, Size: 128, Gen: "from-claim"}
	src.g.Expect(data.Write(src.ctx, cli)).To(Succeed())
	snap, err := cli.Snapshot(src.ctx)
	src.g.Expect(err).NotTo(HaveOccurred())
	defer snap.Close()

	tn := newTenant(t)
	c := tn.cluster("etcd", 3, func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.RestoreSource{
			PVC: &etcdv1alpha2.PVCSource{ClaimName: "staged", SubPath: "snap/restore.db"},
		}}}
	})
	tn.g.Eventually(tn.seedReadyMessage, 20*time.Second).WithArguments(c).Should(ContainSubstring(`persistentvolumeclaim "staged" not found`))

	pvc := tn.claim("staged")
	dir, err := op.Volumes.Mount(pvc)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(os.MkdirAll(filepath.Join(dir, "snap"), 0o755)).To(Succeed())
	// Written in place, as a slow stager would: a seed woken by the claim
	// before the file is whole crash-loops and tries again, as the
	// operator's init container would.
	f, err := os.Create(filepath.Join(dir, "snap", "restore.db"))
	tn.g.Expect(err).NotTo(HaveOccurred())
	_, err = io.Copy(f, snap)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(f.Close()).To(Succeed())

	tn.g.Eventually(tn.seedReadyReason, 30*time.Second).WithArguments(c).Should(Equal("PodReady"), func() string { return tn.seedReadyMessage(c) })
	c = tn.awaitHealthy(c)
	for _, m := range tn.members(c) {
		if m.Spec.Restore != nil {
			tn.g.Expect(m.Spec.Restore.Source.PVC.ClaimName).To(Equal("staged"))
		}
	}
	restored, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer restored.Close()
	tn.g.Expect(data.Check(tn.ctx, restored)).To(Succeed())

	tn.g.Expect(k8s.Delete(tn.ctx, pvc)).To(Succeed())
	tn.g.Eventually(func() error { _, err := os.Stat(dir); return err }, 30*time.Second).Should(MatchError(os.ErrNotExist))
}

// A staging Job (labelled with the RestoreJob's UID) runs its init
// container, then its container, as processes; the refusal's exit code
// (report.ExitRefused) ends the Job at once
// through its podFailurePolicy (FailJob), as the real Job controller
// decides from the Pod's container statuses, and the container's
// termination message carries its report.
func TestStagingRefusalFailsTheJobByPodFailurePolicy(t *testing.T) {
	tn := newTenant(t)
	tn.secret()
	tn.claim("stage")
	job := tn.stagingJob("refused", "stage", func(j *batchv1.Job) {
		j.Spec.Template.Spec.Containers[0].Env = append(j.Spec.Template.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "STAGE_EXIT", Value: strconv.Itoa(report.ExitRefused)}, corev1.EnvVar{Name: "STAGE_OUTCOME", Value: "refused"})
	})

	tn.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(jobCondition(job, batchv1.JobFailed)).To(HaveField("Reason", batchv1.JobReasonPodFailurePolicy))
	}, time.Minute).Should(Succeed())
	pods := tn.jobPods(job)
	tn.g.Expect(pods).To(HaveLen(1), "FailJob: no retry despite backoffLimit 3")
	pod := pods[0]
	tn.g.Expect(pod.Status.Phase).To(Equal(corev1.PodFailed))
	tn.g.Expect(pod.Spec.NodeName).To(Equal(operator.NodeName), "the Pod ran bound to the kubelet's node")
	tn.g.Expect(pod.Status.InitContainerStatuses).To(ConsistOf(HaveField("State.Terminated.ExitCode", BeZero())))
	term := pod.Status.ContainerStatuses[0].State.Terminated
	tn.g.Expect(term).NotTo(BeNil())
	tn.g.Expect(term.ExitCode).To(BeEquivalentTo(report.ExitRefused))
	tn.g.Expect(term.Message).To(Equal(`{"outcome":"refused"}`))
	rollback, err := os.ReadFile(filepath.Join(op.Volumes.Path(tn.ns, "stage"), "rollback.db"))
	tn.g.Expect(err).NotTo(HaveOccurred(), "the init container wrote /staging/rollback.db onto the claim")
	tn.g.Expect(string(rollback)).To(Equal(creds.AccessKeyID))
}

// A staging Pod whose credentials Secret is missing waits in
// CreateContainerConfigError, as under a kubelet, without failing its Job;
// once the Secret exists it runs and the Job completes with the staged
// file on the claim.
func TestStagingPodWaitsForItsSecret(t *testing.T) {
	tn := newTenant(t)
	tn.claim("stage")
	job := tn.stagingJob("waits", "stage", func(j *batchv1.Job) {
		j.Spec.Template.Labels = nil // the Job's label alone marks it
		j.Spec.Template.Spec.InitContainers = nil
	})
	tn.g.Eventually(tn.agentWaitingReason, 20*time.Second).WithArguments(job.Name).Should(Equal("CreateContainerConfigError"))
	tn.g.Consistently(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Failed).To(BeZero())
		g.Expect(job.Status.Succeeded).To(BeZero())
	}, 2*time.Second).Should(Succeed())

	tn.secret()
	tn.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(jobCondition(job, batchv1.JobComplete)).NotTo(BeNil())
	}, time.Minute).Should(Succeed())
	staged, err := os.ReadFile(filepath.Join(op.Volumes.Path(tn.ns, "stage"), "restore.db"))
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(string(staged)).To(Equal(creds.AccessKeyID))
}

// claim creates a PersistentVolumeClaim (it stays Pending: no provisioner).
func (tn *tenant) claim(name string) *corev1.PersistentVolumeClaim {
	tn.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *quantity("1Gi")}},
		},
	}
	tn.g.Expect(k8s.Create(tn.ctx, pvc)).To(Succeed())
	return pvc
}

// stagingJob creates a Job shaped like the driver's staging Job: claim
// mounted at /staging, credentials from secretKeyRefs, an init container
// staging the rollback file, the container the restore file, FailJob on
// the refusal's exit code.
func (tn *tenant) stagingJob(name, claim string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	tn.t.Helper()
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: credsSecret}, Key: key}}
	}
	container := func(name, out string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "sandbox.invalid/etcd-backup-driver:test", Command: []string{stageCommand},
			Args: []string{"--endpoint", s3.URL, "--bucket", bucket, "--key", "some/key.db", "--out", out,
				"--termination-log", corev1.TerminationMessagePathDefault},
			Env: []corev1.EnvVar{
				{Name: objstore.AccessKeyIDKey, ValueFrom: ref(objstore.AccessKeyIDKey)},
				{Name: objstore.SecretAccessKeyKey, ValueFrom: ref(objstore.SecretAccessKeyKey)},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "staging", MountPath: "/staging"}},
		}
	}
	labels := map[string]string{backupsv1alpha1.StagingLabel: "restore-uid-" + name}
	backoff := int32(3)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{report.ExitRefused}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{container("rollback", "/staging/rollback.db")},
					Containers:     []corev1.Container{container("stage", "/staging/restore.db")},
					Volumes: []corev1.Volume{{Name: "staging", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
					}}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(job)
	}
	tn.g.Expect(k8s.Create(tn.ctx, job)).To(Succeed())
	return job
}

func (tn *tenant) jobPods(job *batchv1.Job) []corev1.Pod {
	tn.t.Helper()
	var pods corev1.PodList
	tn.g.Expect(k8s.List(tn.ctx, &pods, client.InNamespace(tn.ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name})).To(Succeed())
	return pods.Items
}

func jobCondition(job *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}
