package restore

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

var (
	restoresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_restores_total",
		Help: "Finished Etcd RestoreJobs by result (succeeded, failed) and Ready reason.",
	}, []string{"result", "reason"})
	restoreDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_backup_driver_restore_duration_seconds",
		Help:    "Time from a RestoreJob taking its application's claim to its end, by result.",
		Buckets: prometheus.ExponentialBuckets(15, 2, 10),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(restoresTotal, restoreDuration)
}

// recordFinish counts a job that just reached a terminal phase. The result
// label is the phase in lower case, the same values the BackupJob metrics
// use, so one alert vocabulary (result="failed") covers both families.
func recordFinish(job *backupsv1alpha1.RestoreJob) {
	result := strings.ToLower(string(job.Status.Phase))
	restoresTotal.WithLabelValues(result, readyReason(job)).Inc()
	if job.Status.StartedAt != nil && job.Status.CompletedAt != nil {
		restoreDuration.WithLabelValues(result).Observe(job.Status.CompletedAt.Sub(job.Status.StartedAt.Time).Seconds())
	}
}
