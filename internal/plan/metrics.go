package plan

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	runsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_runs_total",
		Help: "BackupJobs started by Plans.",
	})
	skippedRunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_skipped_runs_total",
		Help: "Scheduled Plan runs that did not start, by reason.",
	}, []string{"reason"})
	prunedBackupsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_pruned_backups_total",
		Help: "Backups deleted by Plan retention, by rule.",
	}, []string{"rule"})
	lastSuccessfulRehearsal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds",
		Help: "When the newest successful drill (dry-run restore) of a Plan with spec.drill ended, in Unix seconds; absent until one succeeds.",
	}, []string{"namespace", "plan"})
	rehearsalOverdue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_plan_rehearsal_overdue",
		Help: "1 when a Plan with spec.drill has had no successful rehearsal within its window (its RehearsalOverdue condition), else 0.",
	}, []string{"namespace", "plan"})
)

// forgetDrillMetrics removes a Plan's drill series: the Plan is gone or no
// longer drills.
func forgetDrillMetrics(namespace, name string) {
	lastSuccessfulRehearsal.DeleteLabelValues(namespace, name)
	rehearsalOverdue.DeleteLabelValues(namespace, name)
}

func init() {
	metrics.Registry.MustRegister(runsTotal, skippedRunsTotal, prunedBackupsTotal, lastSuccessfulRehearsal, rehearsalOverdue)
}
