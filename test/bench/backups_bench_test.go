package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// BenchmarkBackups has BENCH_TENANTS tenants start a BackupJob at once, in
// rounds, until BENCH_BACKUPS Backups exist. The first round gives the
// latency the driver adds over the operator's time (from the job's create
// to its Succeeded, minus the operator's time on the job's snapshot), the
// driver's CPU time and its API requests per backup; the end gives its
// memory with every Backup (and its snapshot) in its caches. Between
// rounds the jobs older than the last BENCH_JOB_HISTORY rounds (3, a Plan's
// default successfulJobsHistoryLimit; 0 keeps them all) are deleted, as a
// Plan's history limit would.
func BenchmarkBackups(b *testing.B) {
	n := envInt("BENCH_TENANTS", 1000)
	total := envInt("BENCH_BACKUPS", 10*n)
	history := envInt("BENCH_JOB_HISTORY", 3)
	if os.Getenv("BENCH_JOB_HISTORY") == "0" {
		history = 0
	}
	rounds := max(1, (total+n-1)/n)
	tenants := createTenants(b, "bk", n)
	jobs := watchFinish(b, &backupsv1alpha1.BackupJob{}, backupJobEnded)
	d := startDriver(b)
	// One backup first: the figures are those of a running driver, not of
	// its first minute (the provenance key is created, the schema read).
	warm := createBackupJobs(b, tenants[:1], "warm-up")
	warmOver, _, _ := overOperator(b, warm, jobs.await(b, warm, envDuration("BENCH_AWAIT", time.Minute)))
	idle := d.usage(b)
	b.Logf("driver started with %d tenants: RSS %.0f MiB; its first backup took %s over the operator's time",
		n, mib(idle.rss), warmOver[0].Round(time.Millisecond))

	for r := range rounds {
		before, platform0 := d.usage(b), platformCPU(b)
		start := time.Now()
		created := createBackupJobs(b, tenants, fmt.Sprintf("round-%02d", r))
		ended := jobs.await(b, created, envDuration("BENCH_AWAIT", 15*time.Minute))
		wall := time.Since(start)
		after, platform := d.usage(b), platformCPU(b)-platform0
		over, lead, tail := overOperator(b, created, ended)
		b.Logf("round %d: %d backups in %s, over the operator's time %s (p50) %s (p99) [before it %s, after it %s (p50)], driver %.1f CPU-s (API server and etcd %.1f), %.1f requests per backup (%s), RSS %.0f MiB",
			r+1, n, wall.Round(time.Millisecond), percentile(over, 50).Round(time.Millisecond), percentile(over, 99).Round(time.Millisecond),
			percentile(lead, 50).Round(time.Millisecond), percentile(tail, 50).Round(time.Millisecond),
			(after.cpu - before.cpu).Seconds(), platform.Seconds(), (after.requests-before.requests)/float64(n), perOp(before, after, n), mib(after.rss))
		if history > 0 && r >= history {
			pruneJobs(b, tenants, fmt.Sprintf("round-%02d", r-history))
		}
		if r > 0 {
			continue
		}
		b.ReportMetric(percentile(over, 50).Seconds(), "p50-over-operator-s")
		b.ReportMetric(percentile(over, 99).Seconds(), "p99-over-operator-s")
		b.ReportMetric(percentile(over, 100).Seconds(), "max-over-operator-s")
		b.ReportMetric((after.cpu - before.cpu).Seconds(), "driver-CPU-s/round")
		b.ReportMetric(platform.Seconds(), "apiserver+etcd-CPU-s/round")
		b.ReportMetric((after.requests-before.requests)/float64(n), "requests/backup")
	}

	// Let the caches and the last reconciles settle before reading memory.
	time.Sleep(5 * time.Second)
	var list backupsv1alpha1.BackupList
	if err := fast.List(context.Background(), &list); err != nil {
		b.Fatal(err)
	}
	end := d.usage(b)
	d.collect(b)
	live := d.usage(b).heap
	var jobList backupsv1alpha1.BackupJobList
	if err := fast.List(context.Background(), &jobList); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d Backups, as many EtcdSnapshots and %d BackupJobs cached: RSS %.0f MiB (RssAnon %.0f MiB, peak %.0f MiB), live heap %.0f MiB, driver %.1f CPU-s in all",
		len(list.Items), len(jobList.Items), mib(end.rss), mib(end.anon), mib(end.hwm), mib(live), end.cpu.Seconds())
	b.ReportMetric(mib(live), "live-heap-MiB")
	b.ReportMetric(float64(len(list.Items)), "backups-cached")
	b.ReportMetric(mib(end.rss), "RSS-MiB")
	b.ReportMetric(mib(end.anon), "RssAnon-MiB")
	b.ReportMetric(mib(end.hwm), "peak-RSS-MiB")
}

// pruneJobs deletes the BackupJob named name in every tenant.
func pruneJobs(b *testing.B, tenants []string, name string) {
	b.Helper()
	parallel(b, tenants, func(ns string) error {
		job := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return client.IgnoreNotFound(fast.Delete(context.Background(), job))
	})
}

// overOperator is, per job, the time from its create to its end minus the
// operator's time on its snapshot; lead and tail split it into the time
// before the operator saw the snapshot and the time after it reported it.
func overOperator(b *testing.B, created, ended map[types.NamespacedName]time.Time) (over, lead, tail []time.Duration) {
	b.Helper()
	for k, t0 := range created {
		t, ok := op.snapshotTask(k.Namespace, "BackupJob/"+k.Name)
		if !ok {
			b.Fatalf("the operator took no snapshot for %s", k)
		}
		over = append(over, ended[k].Sub(t0)-t.end.Sub(t.start))
		lead = append(lead, t.start.Sub(t0))
		tail = append(tail, ended[k].Sub(t.end))
	}
	return over, lead, tail
}

// backupOf is the Backup a succeeded BackupJob recorded.
func backupOf(b *testing.B, job types.NamespacedName) string {
	b.Helper()
	j := &backupsv1alpha1.BackupJob{}
	if err := fast.Get(context.Background(), job, j); err != nil {
		b.Fatal(err)
	}
	if j.Status.BackupRef == nil {
		b.Fatalf("BackupJob %s names no Backup: %+v", job, j.Status)
	}
	return j.Status.BackupRef.Name
}
