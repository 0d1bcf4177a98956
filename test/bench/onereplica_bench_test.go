package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// BenchmarkOneReplica is BenchmarkShards' round with one unsharded
// replica: the same BENCH_SHARD_TENANTS tenants (3000) each start a
// BackupJob at once, and the replica's RSS and CPU for the round are
// what each shard's should be about a third of. Run it on an API server
// of its own (make bench does), as BenchmarkShards.
func BenchmarkOneReplica(b *testing.B) {
	g := NewWithT(b)
	n := envInt("BENCH_SHARD_TENANTS", 3000)
	tenants := createTenants(b, "one", n)
	jobs := watchFinish(b, &backupsv1alpha1.BackupJob{}, backupJobEnded)
	d := startDriver(b)
	warm := createBackupJobs(b, tenants[:3], "warm-up")
	jobs.await(b, warm, envDuration("BENCH_AWAIT", 2*time.Minute))

	before := d.usage(b)
	start := time.Now()
	created := createBackupJobs(b, tenants, "round")
	jobs.await(b, created, envDuration("BENCH_AWAIT", 15*time.Minute))
	wall := time.Since(start)
	u := d.usage(b)
	done := backupsDone(b, d)
	g.Expect(done).To(BeNumerically("==", n+3), "BackupJobs finished")
	b.Logf("%d tenants, one replica: the round took %s; RSS %.0f MiB (RssAnon %.0f MiB, peak %.0f MiB), %.1f CPU-s this round, %.0f BackupJobs finished",
		n, wall.Round(time.Millisecond), mib(u.rss), mib(u.anon), mib(u.hwm), (u.cpu - before.cpu).Seconds(), done)
	b.ReportMetric(mib(u.rss), "RSS-MiB")
	b.ReportMetric(mib(u.anon), "RssAnon-MiB")
	b.ReportMetric((u.cpu - before.cpu).Seconds(), "CPU-s")
	b.ReportMetric(wall.Seconds(), "round-s")
}
