package sharedcreds

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// sharedNamespaces is served by the replica that leads (the controller runs
// there only).
var sharedNamespaces = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "etcd_backup_driver_shared_credentials_namespaces",
	Help: "Namespaces backing up with the Etcd strategy whose S3 access key another such namespace uses too (0: each has its own).",
}, []string{"strategy"})

func init() {
	metrics.Registry.MustRegister(sharedNamespaces)
}
