package backupdeletion

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	deletedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_backups_deleted_total",
		Help: "Etcd Backups whose deletion finished, by recorded deletion policy and what happened to the stored object (deleted, retained, skipped).",
	}, []string{"policy", "object"})
	failuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_backup_cleanup_failures_total",
		Help: "Failed attempts to clean up after a deleted Etcd Backup, by reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(deletedTotal, failuresTotal)
}
