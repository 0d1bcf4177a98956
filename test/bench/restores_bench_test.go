package bench

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// BenchmarkRestores has BENCH_RESTORES tenants, each with a Backup, restore
// in place at once (safety snapshot, delete, re-create, bootstrap, resume).
// It reports each restore's duration, the part of it that is not the
// operator's (the safety snapshot and the bootstrap), and the driver's API
// requests and CPU time per restore.
func BenchmarkRestores(b *testing.B) {
	n := envInt("BENCH_RESTORES", 20)
	tenants := createTenants(b, "rs", n)
	backups := watchFinish(b, &backupsv1alpha1.BackupJob{}, backupJobEnded)
	restores := watchFinish(b, &backupsv1alpha1.RestoreJob{}, restoreJobEnded)
	// Restores raise the revision by default: the staging Job needs an
	// image (the operator stand-in plays the Job, no Pod runs). The image
	// also turns Backup inspection on, which would inspect every Backup
	// BenchmarkBackups left on this API server while the restores run:
	// it is off here, and BenchmarkInspection measures it.
	d := startDriver(b, "--staging-image=bench.invalid/etcd-stage:bench", "--disable-controllers=backupinspection")

	taken := createBackupJobs(b, tenants, "nightly")
	backups.await(b, taken, envDuration("BENCH_AWAIT", 5*time.Minute))
	from := map[string]string{}
	for k := range taken {
		from[k.Namespace] = backupOf(b, k)
	}
	// The driver is idle again once every job has ended and its last
	// events are out.
	time.Sleep(2 * time.Second)

	before, platform0 := d.usage(b), platformCPU(b)
	created := createAll(b, tenants, func(ns string) client.Object {
		return &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-nightly"},
			Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: from[ns]}}}
	})
	ended := restores.await(b, created, envDuration("BENCH_AWAIT", 10*time.Minute))
	after, platform := d.usage(b), platformCPU(b)-platform0

	var took, over []time.Duration
	for k, t0 := range created {
		d := ended[k].Sub(t0)
		took = append(took, d)
		over = append(over, d-op.since(k.Namespace, t0))
	}
	b.Logf("%d restores at once: each %s (p50) to %s (max); over the operator's time %s (p50) to %s (max); "+
		"%.1f API requests (%s) and %.2f CPU-s per restore (API server and etcd %.2f)",
		n, percentile(took, 50).Round(time.Millisecond), percentile(took, 100).Round(time.Millisecond),
		percentile(over, 50).Round(time.Millisecond), percentile(over, 100).Round(time.Millisecond),
		(after.requests-before.requests)/float64(n), perOp(before, after, n), (after.cpu-before.cpu).Seconds()/float64(n), platform.Seconds()/float64(n))
	b.ReportMetric(percentile(took, 50).Seconds(), "p50-restore-s")
	b.ReportMetric(percentile(took, 100).Seconds(), "max-restore-s")
	b.ReportMetric(percentile(over, 50).Seconds(), "p50-over-operator-s")
	b.ReportMetric(percentile(over, 100).Seconds(), "max-over-operator-s")
	b.ReportMetric((after.requests-before.requests)/float64(n), "requests/restore")
}
