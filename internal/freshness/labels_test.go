package freshness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"
)

// A tenant who writes Backups and Plans with long, garbage or many
// application names gets a bounded number of series, each with a valid
// name or OtherApplication as its application label.
func TestTenantChosenNamesMakeBoundedSeries(t *testing.T) {
	g := NewWithT(t)
	var objs []any
	long := strings.Repeat("a", 5000)
	objs = append(objs, backup("t", "long", long, time.Hour, 1), backup("t", "garbage", "Not A Name!", time.Hour, 1))
	for i := range 500 {
		objs = append(objs, backup("t", fmt.Sprintf("b%03d", i), fmt.Sprintf("app-%03d", i), time.Hour, 1))
	}
	var plans []any
	for i := range 100 {
		plans = append(plans, planFor("t", fmt.Sprintf("p%03d", i), long, "0 3 * * *"))
	}
	plans = append(plans, planFor("u", "nightly", "etcd", "0 3 * * *"))
	c := New(Options{Backups: storeOf(objs...), Plans: storeOf(plans...), Clock: clocktesting.NewFakePassiveClock(now)})
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(c)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())

	perMetric := map[string]int{}
	var verified float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			perMetric[f.GetName()]++
			app := label(m, "application")
			g.Expect(app == OtherApplication || len(app) <= 63 && !strings.ContainsAny(app, " !")).To(BeTrue(), app)
			if f.GetName() == MetricVerified {
				verified += m.GetGauge().GetValue()
			}
			if f.GetName() == MetricPlanInterval && label(m, "namespace") == "u" {
				g.Expect(app).To(Equal("etcd"))
			}
		}
	}
	g.Expect(perMetric[MetricVerified]).To(Equal(MaxSeriesPerNamespace))
	g.Expect(perMetric[MetricPlanInterval]).To(Equal(MaxSeriesPerNamespace + 1))
	// Folded, not lost: every Backup is still counted.
	g.Expect(verified).To(Equal(502.0))
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
