package plankeeper

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	prunedBackupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_pruned_backups_total",
		Help: "Backups deleted by Plan retention, by rule.",
	}, []string{"rule"})
	lastSuccessfulRehearsal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds",
		Help: "When the newest successful drill (dry-run restore) of a Plan with a drill schedule was scheduled, in Unix seconds, from the Plan's signed record; absent until one succeeds.",
	}, []string{"namespace", "plan"})
	rehearsalOverdue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_plan_rehearsal_overdue",
		Help: "1 when a Plan with a drill schedule has had no successful rehearsal within its drill window (its RehearsalOverdue condition), else 0.",
	}, []string{"namespace", "plan"})
)

// forgetDrillMetrics removes a Plan's drill series: the Plan is gone, is
// not the driver's, or no longer drills.
func forgetDrillMetrics(namespace, name string) {
	lastSuccessfulRehearsal.DeleteLabelValues(namespace, name)
	rehearsalOverdue.DeleteLabelValues(namespace, name)
}

func init() {
	metrics.Registry.MustRegister(prunedBackupsTotal, lastSuccessfulRehearsal, rehearsalOverdue)
}
