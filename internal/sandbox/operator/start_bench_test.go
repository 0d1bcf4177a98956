package operator_test

import (
	"testing"
	"time"
)

// BenchmarkThreeMemberStart is how long the stand-in takes from a new
// three-member EtcdCluster to Available with every member ready: real etcd
// processes, member PVCs through the real controller manager. `make bench`
// runs it.
func BenchmarkThreeMemberStart(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		tn := newTenant(b)
		start := time.Now()
		tn.awaitHealthy(tn.cluster("etcd", 3))
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/3-member-start")
}
