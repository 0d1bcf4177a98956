package restore

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Attack (issue 32, item 2): the tenant points its etcd-client Service at
// an internal service; the read's raw error (addresses, ports, the
// certificate names that service showed) must not reach what the tenant
// reads: the RevisionRaised message and the staging Job's annotations
// carry a fixed sentence, the operator's log the error.
func TestLiveRevisionErrorIsNotShownToTheTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	testRevisions.fail(ns, errors.New("read the revision of etcd at etcd-client."+ns+
		".svc:2379: dial tcp 10.96.0.10:2379: tls: failed to verify certificate: x509: certificate is valid for vault.internal.svc, not etcd-client."+ns+".svc"))
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-hidden"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	raised := condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionBumpedBlind)))
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)})).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	for _, leak := range []string{"10.96.0.10", "vault.internal", "x509"} {
		g.Expect(raised.Message).NotTo(ContainSubstring(leak))
		for k, v := range jobs.Items[0].Annotations {
			g.Expect(v).NotTo(ContainSubstring(leak), "annotation %s", k)
		}
		for _, c := range rj.Status.Conditions {
			g.Expect(c.Message).NotTo(ContainSubstring(leak), "condition %s", c.Type)
		}
	}
	g.Expect(raised.Message).To(ContainSubstring("did not answer"))
}

// Fault (issue 32, item 7): tenants whose etcd does not answer (as many as
// the controller has workers) must not hold another tenant's restore: each
// read waits out its 10 s timeout off the workers, and the tenant whose
// etcd answers restores in its usual time.
func TestUnreachableEtcdDoesNotDelayAnotherRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const workers = 4 // the suite's MaxConcurrentReconciles
	var dead []string
	for i := range workers {
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		testRevisions.hang(ns)
		startOperator(t, ns)
		g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-dead"))).To(Succeed())
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
		dead = append(dead, ns)
		_ = i
	}
	g.Eventually(testRevisions.readsWaiting).WithTimeout(60 * time.Second).Should(Equal(workers))

	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-alive"))).To(Succeed())
	start := time.Now()
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	took := time.Since(start)
	t.Logf("the restore next to %d unreachable etcds took %s", workers, took)
	g.Expect(took).To(BeNumerically("<", 7*time.Second), "a worker-bound read would hold it for the 10 s timeout")

	// The unreachable ones go on with the documented blind bump.
	for _, d := range dead {
		rj := waitPhase(t, d, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
		g.Expect(condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised).Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionBumpedBlind)))
	}
}

// Fault (issue 32, item 8): the live cluster is written while the
// snapshot is staged (a writer the fence does not stop). Past half the
// margin the staging left above the revision it read, the purge is
// refused: the restored revision could fall below one clients saw.
func TestLiveRevisionOvertakenDuringStagingIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-overtaken"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	stagingJobOf(t, ns, "restore") // the revision it was staged above was read
	testRevisions.set(ns, defaultLiveRevision+6000)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = false })

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal("LiveRevisionOvertaken"))
	g.Expect(rj.Status.Message).To(ContainSubstring("10242"))
	g.Expect(rj.Status.Message).To(ContainSubstring("the live cluster was not touched"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	raised := condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Status).To(Equal(metav1.ConditionFalse), "nothing was restored: %s", raised.Message)
}

// The same with writes well inside the margin: the purge goes ahead.
func TestLiveRevisionWithinTheMarginIsRestored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-margin"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	stagingJobOf(t, ns, "restore")
	testRevisions.set(ns, defaultLiveRevision+100)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = false })
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised).Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionRaised)))
}

// stagingJobOf waits for the staging Job of RestoreJob name (found by its
// label: its name is the driver's to choose) and returns it.
func stagingJobOf(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	NewWithT(t).Eventually(func(g Gomega) {
		rj := getJob(g, ns, name)
		var jobs batchv1.JobList
		g.Expect(k.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)})).To(Succeed())
		g.Expect(jobs.Items).To(HaveLen(1))
		job = &jobs.Items[0]
	}).WithTimeout(60 * time.Second).Should(Succeed())
	return job
}
