package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPercentile(t *testing.T) {
	g := NewWithT(t)
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	g.Expect(percentile(ds, 50)).To(Equal(50 * time.Millisecond))
	g.Expect(percentile(ds, 99)).To(Equal(99 * time.Millisecond))
	g.Expect(percentile(ds, 100)).To(Equal(100 * time.Millisecond))
	g.Expect(percentile(ds[:1], 99)).To(Equal(100 * time.Millisecond))
	g.Expect(percentile(nil, 50)).To(BeZero())
	g.Expect(ds[0]).To(Equal(100*time.Millisecond), "the input is left unsorted")
}
