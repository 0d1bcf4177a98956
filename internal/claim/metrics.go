package claim

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var sweptTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "etcd_backup_driver_stale_claims_removed_total",
	Help: "Restore claim Leases removed because their RestoreJob (or its namespace) was gone.",
})

func init() {
	metrics.Registry.MustRegister(sweptTotal)
}
