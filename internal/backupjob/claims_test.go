package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// claimFor makes the driver's own claim Lease (claim.Store.Acquire, in the
// driver's namespace, with its exact name and labels) for a RestoreJob of
// the world's namespace, and returns the RestoreJob and the Lease's key.
func (w *world) claimFor(name string) (*backupsv1alpha1.RestoreJob, client.ObjectKey) {
	w.t.Helper()
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "some-backup"}},
	}
	w.create(rj)
	claims := claim.Store{Client: env.Client, Reader: env.Client, Namespace: testenv.DriverNamespace}
	target := claim.Target{Namespace: w.ns, Cluster: "etcd"}
	holder, err := claims.Acquire(w.ctx, rj, target, "etcd")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(holder.HeldBy(rj)).To(BeTrue())
	return rj, client.ObjectKey{Namespace: testenv.DriverNamespace, Name: claim.LeaseName(target)}
}

func (w *world) leaseExists(key client.ObjectKey) bool {
	err := env.Client.Get(w.ctx, key, &coordinationv1.Lease{})
	if apierrors.IsNotFound(err) {
		return false
	}
	w.g.Expect(err).NotTo(HaveOccurred())
	return true
}

// A RestoreJob that holds the claim is deleted without releasing it (its
// finalizer removed by hand, as a stuck namespace deletion invites). The
// BackupJob gate uses the restores' "holder gone" test: the stale claim
// holds nothing, even with no sweeper to remove it, and the gate that saw
// it gone releases it.
func TestClaimOfAGoneRestoreJobDoesNotHoldBackups(t *testing.T) {
	w := newWorld(t)
	w.everything()
	rj, lease := w.claimFor("vanished-restore")
	w.g.Expect(env.Client.Delete(w.ctx, rj)).To(Succeed())

	w.startDriver(func(o *manager.Options) { o.ClaimSweepInterval = -1 })
	job := w.job("after-vanished-restore")
	w.create(job)
	w.awaitSnapshot(job)
	w.g.Expect(w.leaseExists(lease)).To(BeFalse(), "the gate let the job through and left the stale claim (no sweeper runs)")
}

// Claims whose RestoreJob is gone are removed by the sweeper; a claim whose
// RestoreJob still runs is kept.
func TestStaleClaimsAreSwept(t *testing.T) {
	stale, live := newWorld(t), newWorld(t)
	rj, staleLease := stale.claimFor("vanished-restore")
	_, liveLease := live.claimFor("running-restore")
	stale.g.Expect(env.Client.Delete(stale.ctx, rj)).To(Succeed())

	stale.startDriver(func(o *manager.Options) { o.ClaimSweepInterval = 200 * time.Millisecond })
	stale.g.Eventually(func() bool { return stale.leaseExists(staleLease) }).WithTimeout(10 * time.Second).Should(BeFalse())
	live.g.Consistently(func() bool { return live.leaseExists(liveLease) }).WithTimeout(time.Second).Should(BeTrue())
}
