package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPeakRate(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Unix(0, 0)
	// One core busy for two seconds in the middle of ten, idle otherwise.
	var s []cpuSample
	cpu := time.Duration(0)
	for i := range 11 {
		if i == 5 || i == 6 {
			cpu += time.Second
		}
		s = append(s, cpuSample{at: t0.Add(time.Duration(i) * time.Second), cpu: cpu})
	}
	g.Expect(peakRate(s, time.Second)).To(BeNumerically("~", 1.0, 1e-9))
	g.Expect(peakRate(s, 4*time.Second)).To(BeNumerically("~", 0.5, 1e-9))
	g.Expect(peakRate(s[:2], 5*time.Second)).To(BeZero(), "no span is long enough")
}

func TestWarpClock(t *testing.T) {
	g := NewWithT(t)
	from := time.Date(2026, 12, 5, 2, 57, 0, 0, time.UTC)
	c := &warpClock{from: from, speed: 60}
	g.Expect(c.Now()).To(Equal(from), "stands still until started")
	c.start()
	time.Sleep(50 * time.Millisecond)
	g.Expect(c.Since(from)).To(BeNumerically(">=", 3*time.Second))
	g.Expect(c.real(time.Minute)).To(Equal(time.Second))
}
