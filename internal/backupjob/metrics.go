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

	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_last_success_timestamp_seconds",
		Help: "Unix time of the newest successful backup of each application.",
	}, []string{"namespace", "application"})

	lastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_last_snapshot_size_bytes",
		Help: "Size of the newest successful snapshot of each application.",
	}, []string{"namespace", "application"})
)

func init() {
	metrics.Registry.MustRegister(backupsTotal, backupDuration, lastSuccess, lastSize)
}
