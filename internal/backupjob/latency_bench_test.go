package backupjob_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// BenchmarkCompleteToSucceeded measures the latency the driver adds between
// the operator marking a snapshot Complete and the BackupJob reaching
// Succeeded (Backup created, snapshot handed over, status written), against
// a real API server. Run: go test ./internal/backupjob -run '^$' -bench . -benchtime 20x
func BenchmarkCompleteToSucceeded(b *testing.B) {
	w := newWorld(b)
	w.everything()
	w.startDriver(nil)

	var total time.Duration
	for i := 0; b.Loop(); i++ {
		job := w.job(fmt.Sprintf("bench-%d", i))
		w.create(job)
		snap := w.awaitSnapshot(job)
		start := time.Now()
		w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
		w.g.Eventually(func() backupsv1alpha1.BackupJobPhase {
			w.get(job)
			return job.Status.Phase
		}).WithPolling(time.Millisecond).WithTimeout(30 * time.Second).Should(Equal(backupsv1alpha1.BackupJobPhaseSucceeded))
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/complete-to-succeeded")
}
