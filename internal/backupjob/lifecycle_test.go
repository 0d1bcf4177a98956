package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// A job re-created under the same name is a new job: it gets a new
// snapshot, and it will not claim a Backup the old job recorded.
func TestRecreatedJobGetsNewSnapshot(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)

	first := w.job("daily")
	w.create(first)
	firstSnap := w.awaitSnapshot(first)
	w.operatorFinishes(firstSnap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(first, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	w.g.Expect(env.Client.Delete(w.ctx, first)).To(Succeed())
	// The in-flight finalizer may still be on a job that just succeeded:
	// the name is free once the job is really gone.
	w.awaitGone(first)

	// The old Backup still stands: the new job must not adopt it.
	second := w.job("daily")
	w.create(second)
	w.g.Expect(second.UID).NotTo(Equal(first.UID))
	secondSnap := w.awaitSnapshot(second)
	w.g.Expect(secondSnap.Name).NotTo(Equal(firstSnap.Name))
	w.operatorFinishes(secondSnap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(second, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(second, backupsv1alpha1.BackupReasonBackupConflict)
	w.g.Expect(cond.Message).To(ContainSubstring("was not made by this BackupJob"))
	old := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "daily"}}
	w.get(old)
	w.g.Expect(old.Spec.DriverMetadata["etcd.aenix.io/backup-name"]).To(Equal(firstSnap.Name), "the old Backup is untouched")

	// With the old Backup gone, a third job of that name succeeds.
	w.g.Expect(env.Client.Delete(w.ctx, second)).To(Succeed())
	w.awaitGone(second)
	// The Backup's finalizer would delete its S3 object (policy Delete);
	// this test has no S3 server, so keep the object, and wait until the
	// Backup is really gone.
	patch := client.MergeFrom(old.DeepCopy())
	old.Annotations = map[string]string{backupdeletion.SkipObjectDeletionAnnotation: "true"}
	w.g.Expect(env.Client.Patch(w.ctx, old, patch)).To(Succeed())
	w.g.Expect(env.Client.Delete(w.ctx, old)).To(Succeed())
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(old), &backupsv1alpha1.Backup{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	third := w.job("daily")
	w.create(third)
	thirdSnap := w.awaitSnapshot(third)
	w.g.Expect(thirdSnap.Name).NotTo(BeElementOf(firstSnap.Name, secondSnap.Name))
	w.operatorFinishes(thirdSnap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(third, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
}

// While a RestoreJob holds the application, a BackupJob waits; it proceeds
// as soon as the claim is released.
func TestJobWaitsWhileRestoreHoldsTheApplication(t *testing.T) {
	w := newWorld(t)
	w.everything()
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "restore-1"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "some-backup"}},
	}
	w.create(rj)
	claims := claim.Store{Client: env.Client, Reader: env.Client, Namespace: testenv.DriverNamespace}
	target := claim.Target{Namespace: w.ns, Cluster: "etcd"}
	w.get(rj)
	holder, err := claims.Acquire(w.ctx, rj, target, "etcd")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(holder.HeldBy(rj)).To(BeTrue())

	w.startDriver(nil)
	job := w.job("during-restore")
	w.create(job)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonRestoreInProgress)
	w.g.Expect(cond.Message).To(ContainSubstring("restore-1"))
	w.g.Consistently(func() int { return len(w.snapshotsOf(job)) }).WithTimeout(2 * time.Second).Should(BeZero())

	w.g.Expect(claims.Release(w.ctx, target, holder)).To(Succeed())
	w.awaitSnapshot(job)
}

// awaitGone waits until job no longer exists.
func (w *world) awaitGone(job *backupsv1alpha1.BackupJob) {
	w.t.Helper()
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(job), &backupsv1alpha1.BackupJob{}))
	}).WithTimeout(30*time.Second).Should(BeTrue(), "BackupJob %s is gone", job.Name)
}
