package plan

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	runsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_runs_total",
		Help: "BackupJobs started by the driver's Plan scheduler.",
	})
	skippedRunsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_plan_skipped_runs_total",
		Help: "Scheduled Plan runs that did not start, by reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(runsTotal, skippedRunsTotal)
}
