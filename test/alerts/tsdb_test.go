package alerts

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Labels Prometheus adds to every series it scrapes from the driver's
// metrics Service (a ServiceMonitor's job is the Service's name).
const (
	scrapeJob      = "etcd-backup-driver-metrics"
	scrapeInstance = "10.0.0.7:8080"
)

// scrape is one /metrics response, parsed.
type scrape map[string]*dto.MetricFamily

func scrapeURL(url string) (scrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// sample is one float sample of a series.
type sample struct {
	lbls  labels.Labels
	value float64
}

// samples flattens a scrape into the series Prometheus stores, labelled
// with the scrape's job and instance: histograms become _bucket (with le),
// _sum and _count series.
func (s scrape) samples() []sample {
	var out []sample
	for name, mf := range s {
		for _, m := range mf.GetMetric() {
			base := map[string]string{"job": scrapeJob, "instance": scrapeInstance}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			add := func(metric string, v float64, extra ...string) {
				l := map[string]string{"__name__": metric}
				for k, v := range base {
					l[k] = v
				}
				for i := 0; i+1 < len(extra); i += 2 {
					l[extra[i]] = extra[i+1]
				}
				out = append(out, sample{lbls: labels.FromMap(l), value: v})
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", float64(b.GetCumulativeCount()), "le", formatLe(b.GetUpperBound()))
				}
				add(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				add(name+"_sum", h.GetSampleSum())
				add(name+"_count", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				add(name+"_sum", m.GetSummary().GetSampleSum())
				add(name+"_count", float64(m.GetSummary().GetSampleCount()))
			}
		}
	}
	return out
}

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprint(v)
}

// names lists the metric names a scrape serves, with a histogram's series
// names too.
func (s scrape) names() map[string]bool {
	out := map[string]bool{}
	for name, mf := range s {
		out[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = true
			}
		}
	}
	return out
}

// point is a scrape stored at a time, with the up series Prometheus
// records for it.
type point struct {
	at time.Time
	s  scrape
	up float64
	// edit, when set, changes a sample before it is stored (the
	// "what if" scenarios below).
	edit func(*sample)
}

// load appends every point to db.
func load(t *testing.T, db storage.Appendable, points []point) {
	t.Helper()
	app := db.Appender(context.Background())
	for _, p := range points {
		ts := p.at.UnixMilli()
		for _, smp := range p.s.samples() {
			if p.edit != nil {
				p.edit(&smp)
			}
			if _, err := app.Append(0, smp.lbls, ts, smp.value); err != nil {
				t.Fatalf("append %s: %v", smp.lbls, err)
			}
		}
		up := labels.FromStrings("__name__", "up", "job", scrapeJob, "instance", scrapeInstance)
		if _, err := app.Append(0, up, ts, p.up); err != nil {
			t.Fatalf("append up: %v", err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}
