package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// stalledSafetySnapshot starts a restore in a new namespace whose
// etcd-operator starts its safety snapshot and never finishes it, and
// returns once the snapshot is Started, with the live cluster as it was.
func stalledSafetySnapshot(t *testing.T, g Gomega) (string, *backupsv1alpha1.RestoreJob, *etcdv1alpha2.EtcdSnapshot, *unstructured.Unstructured) {
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.StallSnapshots = true })
	before := getCluster(g, ns)

	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonSafetySnapshotRunning)
	snap := &etcdv1alpha2.EtcdSnapshot{}
	g.Eventually(func() etcdv1alpha2.SnapshotPhase {
		_ = k.Get(ctx, keyOf(ns, safetyName(rj)), snap)
		return snap.Status.Phase
	}).WithTimeout(30 * time.Second).Should(Equal(etcdv1alpha2.SnapshotPhaseStarted))
	return ns, rj, snap, before
}

// A safety snapshot the operator never finishes (it died under it) does not
// hold the restore claim for ever: past its bound the restore fails with
// the live cluster untouched, the snapshot is deleted (it cannot land later
// as an object no Backup records), and the claim is free for the next job.
func TestSafetySnapshotNobodyFinishesIsBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, rj, snap, before := stalledSafetySnapshot(t, g)

	// Past the bound (and the restore's own deadline). The next event on
	// the snapshot wakes the job.
	clockSkew.Store(int64(safetySnapshotBound + time.Minute))
	t.Cleanup(func() { clockSkew.Store(0) })
	meta.SetStatusCondition(&snap.Status.Conditions, metav1.Condition{Type: "Progress", Status: metav1.ConditionTrue, Reason: "Streaming"})
	g.Expect(k.Status().Update(ctx, snap)).To(Succeed())

	rj = waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonSafetySnapshotFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring("no outcome within"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(before.GetUID()), "the live cluster was touched")
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(claimHolder(g, ns)).To(BeNil())
	err := k.Get(ctx, client.ObjectKeyFromObject(snap), &etcdv1alpha2.EtcdSnapshot{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the abandoned safety snapshot is still there: %v", err)
	g.Expect(eventReasons(ns)).To(ContainElement(string(backupsv1alpha1.ReasonSafetySnapshotFailed)))
}

// A RestoreJob deleted while its safety snapshot has no outcome (the
// etcd-operator is down) has destroyed nothing: the snapshot is abandoned
// at once (deleted, so it cannot land later as an object no Backup
// records), the claim is released and the job goes, instead of holding
// the cluster's claim, and so the tenant's backups, for the snapshot's
// 35-minute bound.
func TestDeletedRestoreAbandonsItsSafetySnapshotAtOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, rj, snap, before := stalledSafetySnapshot(t, g)
	g.Expect(claimHolder(g, ns)).NotTo(BeNil())

	g.Expect(k.Delete(ctx, rj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(rj), &backupsv1alpha1.RestoreJob{}))
	}).WithTimeout(20*time.Second).Should(BeTrue(), "the deleted RestoreJob waits for its safety snapshot")
	g.Expect(claimHolder(g, ns)).To(BeNil(), "the claim outlived the deleted RestoreJob")
	err := k.Get(ctx, client.ObjectKeyFromObject(snap), &etcdv1alpha2.EtcdSnapshot{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the abandoned safety snapshot is still there: %v", err)
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(before.GetUID()), "the live cluster was touched")
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	var safety backupsv1alpha1.BackupList
	g.Expect(k.List(ctx, &safety, client.InNamespace(ns), client.HasLabels{backupsv1alpha1.SafetyBackupLabel})).To(Succeed())
	g.Expect(safety.Items).To(BeEmpty(), "a safety Backup was recorded for a restore that was abandoned")
}
