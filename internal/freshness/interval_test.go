package freshness

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
)

func TestPlanInterval(t *testing.T) {
	// A Monday in March, before Europe's spring clock change (29 March).
	from := time.Date(2026, 3, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		cron string
		want time.Duration
	}{
		{"@daily", 24 * time.Hour},
		{"0 2 * * *", 24 * time.Hour},
		{"*/15 * * * *", 15 * time.Minute},
		{"@every 90m", 90 * time.Minute},
		{"0 2 * * 1-5", 72 * time.Hour}, // Friday to Monday
		{"0 2 1 * *", 31 * 24 * time.Hour},
		// The spring change makes one gap 23h; the longest stays 24h.
		{"CRON_TZ=Europe/Berlin 0 2 * * *", 24 * time.Hour},
		{"0 0 30 2 *", 0}, // 30 February never comes
		{"H H * * *", 24 * time.Hour},
		{"CRON_TZ=Europe/Berlin H(0-29)/15 H * * 1-5", 72*time.Hour - 15*time.Minute}, // last Friday run to first Monday run
	} {
		t.Run(tc.cron, func(t *testing.T) {
			g := NewWithT(t)
			got, err := PlanInterval(tc.cron, "ns/p", from)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	// Across the autumn change a daily run waits 25h once.
	got, err := PlanInterval("CRON_TZ=Europe/Berlin 0 2 * * *", "ns/p", time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(got).To(Equal(25 * time.Hour))

	_, err = PlanInterval("61 * * * *", "ns/p", from)
	NewWithT(t).Expect(err).To(HaveOccurred())
	_, err = PlanInterval("H(0-60) * * * *", "ns/p", from)
	NewWithT(t).Expect(err).To(HaveOccurred())

	// H/25 runs two or three times an hour depending on the hashed offset:
	// the interval is each Plan's own.
	for _, key := range []string{"a/p", "b/p", "c/p", "d/p"} {
		resolved, err := hashcron.Resolve("H/25 * * * *", key)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		want, _ := PlanInterval(resolved, "", from)
		got, err := PlanInterval("H/25 * * * *", key, from)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(got).To(Equal(want), key)
	}
}

func TestStale(t *testing.T) {
	g := NewWithT(t)
	day := 24 * time.Hour
	g.Expect(Stale(35*time.Hour, day, DefaultStaleFactor)).To(BeFalse())
	g.Expect(Stale(37*time.Hour, day, DefaultStaleFactor)).To(BeTrue())
	g.Expect(Stale(1000*time.Hour, 0, DefaultStaleFactor)).To(BeFalse(), "no Plan interval, no verdict")
}
