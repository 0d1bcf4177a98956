package inspection

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// killed plays the kubelet for a Pod of j killed out of memory (exit 137,
// no report) and the Job controller giving up on it.
func (h *harness) killed(j *batchv1.Job) {
	yes := true
	c := j.Spec.Template.Spec.Containers
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, GenerateName: j.Name + "-",
			Labels:          map[string]string{batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: c, Volumes: j.Spec.Template.Spec.Volumes},
	}
	h.g.Expect(env.Client.Create(h.ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: c[0].Name, Image: c[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
	}}}
	h.g.Expect(env.Client.Status().Update(h.ctx, pod)).To(Succeed())
	now := metav1.Now()
	j.Status.StartTime, j.Status.Failed = &now, 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
	}
	h.g.Expect(env.Client.Status().Update(h.ctx, j)).To(Succeed())
}

func (h *harness) gone(j *batchv1.Job) {
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKeyFromObject(j), &batchv1.Job{}))
	}).Should(BeTrue())
}

// The inspector failing is not the Backup failing (issue 37 item 8): an
// inspection Pod killed out of memory, S3 refusing the keys, or a report
// of arguments the step refused (an upgrade) leaves the Backup good
// (goodbackup.Sound), says InspectionRetrying with a Warning Event, and
// the driver inspects again after a backoff that doubles; the next
// inspection that succeeds records the manifest and forgets the retries.
// Only evidence about the bytes (TestARefusedInspectionIsNeverTheGoodBackup)
// condemns.
func TestTheInspectorFailingIsNotTheBackupFailing(t *testing.T) {
	h := newHarness(t)
	g := h.g
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC))
	h.r.Clock = clk
	b := h.backup("nightly-1", 0)

	for i, fail := range []func(j *batchv1.Job){
		h.killed,
		func(j *batchv1.Job) {
			h.finish(j, step.NewReport(driverv1alpha1.BackupManifest{}, fmt.Errorf("get the object: %w", s3object.ErrAccessDenied)), nil)
		},
		func(j *batchv1.Job) {
			h.finish(j, step.NewReport(driverv1alpha1.BackupManifest{}, fmt.Errorf("flag provided but not defined: -new-flag: %w", stagingstep.ErrArguments)), nil)
		},
	} {
		h.reconcile(b)
		j := h.job(b)
		fail(j)
		h.reconcile(b)
		c := condition(b, backupsv1alpha1.BackupConditionInspected)
		g.Expect(c).To(HavePrefix("False InspectionRetrying: the inspection Job "+j.Name+" failed"), "failure %d", i)
		g.Expect(c).To(ContainSubstring(fmt.Sprintf("not evidence against the Backup, which still counts as good: attempt %d", i+1)))
		g.Expect(goodbackup.Sound(b, true)).To(BeTrue(), "failure %d: the Backup is still good", i)
		g.Expect(goodbackup.Good(b, true)).To(BeTrue())
		g.Expect(strings.Join(testenv.Drain(h.rec.Events), "\n")).To(ContainSubstring("Warning InspectionRetrying"))
		rec := artifact.InspectionRetry(b)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Attempts).To(Equal(int32(i + 1)))
		wait := retryFirst << i
		g.Expect(rec.NotBefore.Time).To(BeTemporally("==", clk.Now().Add(wait)))
		h.gone(j)

		// Before the backoff ends, no new Job.
		res, err := h.r.Reconcile(h.ctx, reconcileRequest(b))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(Equal(wait))
		g.Expect(apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKeyFromObject(j), &batchv1.Job{}))).To(BeTrue())
		clk.Step(wait)
	}

	h.reconcile(b)
	h.finish(h.job(b), inspected(manifest(10, "default", "shop")), nil)
	h.reconcile(b)
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("True Inspected: "))
	g.Expect(artifact.InspectionRetry(b)).To(BeNil(), "a success forgets the retries")
	g.Expect(artifact.Manifest(b)).NotTo(BeNil())
}
