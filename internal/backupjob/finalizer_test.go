package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// A BackupJob deleted while the operator streams its snapshot to S3 (Plan
// history pruning, or a tenant) would leave an object no Backup names: the
// job is kept until the snapshot ends, the Backup is recorded, and then the
// job goes.
func TestJobDeletedWhileItsSnapshotRunsDoesNotOrphanTheObject(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("deleted-mid-snapshot")
	w.create(job)
	snap := w.awaitSnapshot(job)
	w.get(job)
	w.g.Expect(job.Finalizers).To(ContainElement(backupsv1alpha1.BackupJobSnapshotFinalizer))

	w.g.Expect(env.Client.Delete(w.ctx, job)).To(Succeed())
	w.g.Consistently(func() error {
		return env.Client.Get(w.ctx, client.ObjectKeyFromObject(job), &backupsv1alpha1.BackupJob{})
	}).WithTimeout(time.Second).Should(Succeed(), "the job went while its snapshot ran")

	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(job), &backupsv1alpha1.BackupJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	var b backupsv1alpha1.Backup
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: job.Name}, &b)).To(Succeed(),
		"no Backup names the snapshot's object")
	w.g.Expect(b.Status.Artifact.URI).To(ContainSubstring(snap.Name))
}
