package backupjob_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// A tenant's burst of BackupJobs starts one snapshot of its cluster at a
// time (the default bound): the others wait, Pending WaitingForSnapshotSlot,
// and each starts when the snapshot before it ends.
func TestBurstOfBackupJobsRunsOneSnapshotAtATime(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(func(o *manager.Options) { o.MaxSnapshotsPerCluster = 1 })
	var jobs []*backupsv1alpha1.BackupJob
	for i := range 5 {
		j := w.job(fmt.Sprintf("burst-%d", i))
		w.create(j)
		jobs = append(jobs, j)
	}
	for range jobs {
		// Exactly one snapshot runs; every other job waits for it.
		var running []etcdv1alpha2.EtcdSnapshot
		w.g.Eventually(func() int {
			running = w.runningSnapshots()
			return len(running)
		}).WithTimeout(30 * time.Second).Should(Equal(1))
		w.g.Consistently(func() int { return len(w.runningSnapshots()) }).WithTimeout(time.Second).Should(Equal(1))
		for _, j := range jobs {
			if len(w.snapshotsOf(w.get(j).(*backupsv1alpha1.BackupJob))) == 0 {
				w.awaitReason(j, backupsv1alpha1.BackupReasonWaitingForSnapshotSlot)
				w.g.Expect(j.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhasePending))
			}
		}
		w.operatorFinishes(&running[0], etcdv1alpha2.SnapshotPhaseComplete)
	}
	for _, j := range jobs {
		w.awaitPhase(j, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	}
}

// runningSnapshots are the namespace's EtcdSnapshots without an outcome.
func (w *world) runningSnapshots() []etcdv1alpha2.EtcdSnapshot {
	var list etcdv1alpha2.EtcdSnapshotList
	w.g.Expect(env.Client.List(w.ctx, &list, client.InNamespace(w.ns))).To(Succeed())
	var out []etcdv1alpha2.EtcdSnapshot
	for _, s := range list.Items {
		if s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete && s.Status.Phase != etcdv1alpha2.SnapshotPhaseFailed {
			out = append(out, s)
		}
	}
	return out
}
