package bench

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
)

// BenchmarkInspection measures what inspecting Backups costs the driver
// (internal/tenantjobs/inspection), on an API server of its own. BENCH_TENANTS
// tenants back up once with the inspection controller off
// (--disable-controllers=backupinspection): the baseline. Then a driver
// with it on inspects that round's Backups as a backlog, with nothing
// else running: its requests per Backup are the inspection's alone
// (Job create, Backup patches, the Pod list). Last, the same driver takes
// a second round with inspection on, measured from the BackupJobs' create
// to every Backup inspected. Both drivers get --staging-image, so only the
// controller differs, and neither runs shared-key detection, whose first
// reads of every namespace (2 GETs each, see docs/scale.md) would land in
// whichever phase a new driver starts in. A stand-in kubelet (startInspectionKubelet) ends each
// inspection Job BENCH_INSPECT_DELAY (2s, as the operator's snapshot)
// after its create with the report of a 50,000-object snapshot.
func BenchmarkInspection(b *testing.B) {
	n := envInt("BENCH_TENANTS", 1000)
	image := "--staging-image=bench.invalid/etcd-stage:bench"
	tenants := createTenants(b, "in", n)
	jobs := watchFinish(b, &backupsv1alpha1.BackupJob{}, backupJobEnded)
	inspected := watchFinish(b, &backupsv1alpha1.Backup{}, backupInspected)
	startInspectionKubelet(b, inspectionstep.NewReport(benchManifest(), nil), envDuration("BENCH_INSPECT_DELAY", defaultOperatorDelay))

	// The baseline: the backup path alone.
	plain := startDriver(b, image, "--disable-controllers=sharedcreds,backupinspection")
	warm := createBackupJobs(b, tenants[:1], "warm-up")
	jobs.await(b, warm, envDuration("BENCH_AWAIT", time.Minute))
	base := backupRound(b, plain, jobs, tenants, "round-00")
	time.Sleep(2 * time.Second) // the last reconciles
	plain.collect(b)
	plainHeap := plain.usage(b).heap
	plain.stop(b)

	// The backlog: every Backup so far, inspected by a driver that does
	// nothing else meanwhile (its start, caches and first reads included).
	d := startDriver(b, image, "--disable-controllers=sharedcreds")
	u0 := d.usage(b)
	start := time.Now()
	backlog := backupsOf(b, base.created)
	for k := range backupsOf(b, warm) {
		backlog[k] = time.Time{}
	}
	inspected.await(b, backlog, envDuration("BENCH_AWAIT", 15*time.Minute))
	u1 := d.usage(b)
	k := len(backlog)
	time.Sleep(2 * time.Second)
	d.collect(b)
	heap := d.usage(b).heap
	b.Logf("backlog of %d Backups inspected in %s: %.2f requests per Backup (%s), driver %.1f ms CPU per Backup; "+
		"live heap with them and their Jobs cached %.1f MiB (%.1f MiB before, without inspection: %.1f KiB more per Backup)",
		k, time.Since(start).Round(time.Millisecond), (u1.requests-u0.requests)/float64(k), perOp(u0, u1, k),
		float64((u1.cpu-u0.cpu).Milliseconds())/float64(k), mib(heap), mib(plainHeap), float64(heap-plainHeap)/1024/float64(k))

	// A round with inspection: to its last Backup inspected.
	time.Sleep(2 * time.Second)
	with := backupRound(b, d, jobs, tenants, "round-01")
	ended := inspected.await(b, backupsOf(b, with.created), envDuration("BENCH_AWAIT", 15*time.Minute))
	u2 := d.usage(b)
	var lag []time.Duration
	for job, t := range with.ended {
		lag = append(lag, ended[types.NamespacedName{Namespace: job.Namespace, Name: backupOf(b, job)}].Sub(t))
	}
	total := (u2.requests - with.before.requests) / float64(n)
	b.Logf("with inspection: %.2f requests per backup to its Backup inspected (%s); %.2f to its BackupJob's end (baseline %.2f: %s); "+
		"over the operator %s p50 (baseline %s); inspected %s after its BackupJob ended (p50), %s (p99); driver %.1f ms CPU per backup (baseline %.1f)",
		total, perOp(with.before, u2, n), with.requests, base.requests, perOp(base.before, base.after, n),
		percentile(with.over, 50).Round(time.Millisecond), percentile(base.over, 50).Round(time.Millisecond),
		percentile(lag, 50).Round(time.Millisecond), percentile(lag, 99).Round(time.Millisecond),
		float64((u2.cpu-with.before.cpu).Milliseconds())/float64(n), float64((base.after.cpu-base.before.cpu).Milliseconds())/float64(n))
	d.collect(b)
	end := d.usage(b)
	b.Logf("%d Backups and their inspection Jobs cached: RSS %.0f MiB, live heap %.0f MiB", 2*n+1, mib(end.rss), mib(end.heap))

	b.ReportMetric(total, "requests/backup")
	b.ReportMetric(base.requests, "uninspected-requests/backup")
	b.ReportMetric((u1.requests-u0.requests)/float64(k), "inspection-requests/backup")
	b.ReportMetric(total-base.requests, "added-requests/backup")
	b.ReportMetric(percentile(with.over, 50).Seconds(), "p50-over-operator-s")
	b.ReportMetric(percentile(base.over, 50).Seconds(), "uninspected-p50-over-operator-s")
	b.ReportMetric(percentile(lag, 50).Seconds(), "p50-inspected-after-s")
	b.ReportMetric(float64(heap-plainHeap)/1024/float64(k), "inspection-heap-KiB/backup")
}

// round is one round of backups: when each job was created and ended, the
// driver's usage before it and at its last job's end, its requests per
// backup and the time each job took over the operator's.
type round struct {
	created, ended map[types.NamespacedName]time.Time
	before, after  usage
	requests       float64
	over           []time.Duration
}

// backupRound has every tenant take a backup named name at once.
func backupRound(b *testing.B, d *driver, jobs *finishLine, tenants []string, name string) round {
	b.Helper()
	var r round
	r.before = d.usage(b)
	start := time.Now()
	r.created = createBackupJobs(b, tenants, name)
	r.ended = jobs.await(b, r.created, envDuration("BENCH_AWAIT", 15*time.Minute))
	r.after = d.usage(b)
	r.requests = (r.after.requests - r.before.requests) / float64(len(tenants))
	r.over, _, _ = overOperator(b, r.created, r.ended)
	b.Logf("%s: %d backups in %s, %.2f requests per backup (%s), over the operator %s (p50)", name, len(tenants),
		time.Since(start).Round(time.Millisecond), r.requests, perOp(r.before, r.after, len(tenants)),
		percentile(r.over, 50).Round(time.Millisecond))
	return r
}

// backupsOf names the Backup of every succeeded BackupJob in jobs.
func backupsOf(b *testing.B, jobs map[types.NamespacedName]time.Time) map[types.NamespacedName]time.Time {
	b.Helper()
	out := map[types.NamespacedName]time.Time{}
	for k := range jobs {
		out[types.NamespacedName{Namespace: k.Namespace, Name: backupOf(b, k)}] = time.Time{}
	}
	return out
}

// backupInspected reports a Backup's inspection's end: Inspected True, or
// False for any reason but InspectionPending (a failure).
func backupInspected(o any) (bool, string) {
	bk := o.(*backupsv1alpha1.Backup)
	c := meta.FindStatusCondition(bk.Status.Conditions, backupsv1alpha1.BackupConditionInspected)
	switch {
	case c == nil || c.Reason == backupsv1alpha1.BackupReasonInspectionPending:
		return false, ""
	case c.Status == "True":
		return true, ""
	}
	return true, c.Reason + ": " + c.Message
}

// benchManifest is what inspecting a tenant's snapshot of 50,000
// Kubernetes objects reports: 100 namespaces, five resources, counted by
// a real Counter.
func benchManifest() driverv1alpha1.BackupManifest {
	c := manifest.NewCounter()
	for n := range 100 {
		c.Add(fmt.Appendf(nil, "/registry/namespaces/ns-%03d", n))
		for _, r := range []string{"pods", "configmaps", "secrets", "services/specs", "apps/deployments"} {
			for i := range 100 {
				c.Add(fmt.Appendf(nil, "/registry/%s/ns-%03d/obj-%03d", r, n, i))
			}
		}
	}
	ks, truncated := c.Keyspaces()
	return driverv1alpha1.BackupManifest{Revision: 55_001, CompactedRevision: 50_000, Keys: c.Keys(), DBSizeBytes: 40 << 20,
		Keyspaces: ks, Truncated: truncated}
}
