package eventrecorder

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	written = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_events_written_total",
		Help: "Events the driver wrote.",
	})
	failed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_events_failed_total",
		Help: "Events the API server refused or did not answer in time (logged).",
	})
	dropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_events_dropped_total",
		Help: "Events dropped because the queue of Events to write was full.",
	})
)

func init() {
	metrics.Registry.MustRegister(written, failed, dropped)
}
