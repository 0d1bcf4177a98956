package keeper

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// lagSet holds, per followed Plan, the time the lag is counted from and
// the admin's bound; the lag itself is computed when scraped, so it grows
// while nothing is reported (no timer, no read).
type lagSet struct {
	mu   sync.Mutex
	now  func() time.Time
	byID map[[2]string]lagEntry
}

type lagEntry struct {
	since  time.Time
	maxLag time.Duration
}

var (
	lagDesc = prometheus.NewDesc("etcd_backup_driver_capture_lag_seconds",
		"Seconds since the newest change the point-in-time capture of a Plan's application made durable in S3 (since its window's start before the first; it grows through a gap until a new chain reports).",
		[]string{"namespace", "plan"}, nil)
	maxLagDesc = prometheus.NewDesc("etcd_backup_driver_capture_max_lag_seconds",
		"The lag the platform allows a Plan's capture (its StrategyPolicy's spec.pointInTime.maxLagSeconds).",
		[]string{"namespace", "plan"}, nil)
	lags = &lagSet{now: time.Now, byID: map[[2]string]lagEntry{}}
)

func init() { metrics.Registry.MustRegister(lags) }

func (l *lagSet) set(ns, plan string, since time.Time, maxLag time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[[2]string{ns, plan}] = lagEntry{since: since, maxLag: maxLag}
}

// setClock makes the lag count on the reconciler's clock.
func (l *lagSet) setClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

func (l *lagSet) forget(ns, plan string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byID, [2]string{ns, plan})
}

// Describe implements prometheus.Collector.
func (l *lagSet) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- maxLagDesc
}

// Collect implements prometheus.Collector.
func (l *lagSet) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for id, e := range l.byID {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, max(now.Sub(e.since).Seconds(), 0), id[0], id[1])
		ch <- prometheus.MustNewConstMetric(maxLagDesc, prometheus.GaugeValue, e.maxLag.Seconds(), id[0], id[1])
	}
}
