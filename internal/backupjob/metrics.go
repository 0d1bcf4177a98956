package backupjob

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	backupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_backups_total",
		Help: "BackupJobs the Etcd driver finished, by result (succeeded, failed) and Ready reason.",
	}, []string{"result", "reason"})

	backupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_backup_driver_backup_duration_seconds",
		Help:    "Time from a BackupJob being taken to its terminal phase.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13), // 1s .. ~68m
	}, []string{"result"})

	// The per-application last-success time and size are not set here:
	// internal/freshness derives them from the cached Backups on every
	// scrape, so they survive restarts.
)

func init() {
	metrics.Registry.MustRegister(backupsTotal, backupDuration)
}
