package intern

import (
	"strings"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
)

// fresh returns a copy of s in memory of its own, as a decoder makes it.
func fresh(s string) string { return strings.Clone(s) }

// at is where s's bytes are.
func at(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

func TestRepeatedStringsShareOneCopy(t *testing.T) {
	g := NewWithT(t)
	tab := New(10)
	a, b := tab.String(fresh("tenant-a")), tab.String(fresh("tenant-a"))
	g.Expect(a).To(Equal("tenant-a"))
	g.Expect(at(a)).To(Equal(at(b)))
	g.Expect(tab.String("")).To(BeEmpty())

	x, y := tab.Bytes([]byte(`{"k":1}`)), tab.Bytes([]byte(`{"k":1}`))
	g.Expect(string(y)).To(Equal(`{"k":1}`))
	g.Expect(uintptr(unsafe.Pointer(&x[0]))).To(Equal(uintptr(unsafe.Pointer(&y[0]))))
}

// Past its limit a Table shares nothing new but still answers: what it
// returns is always equal to what it was given.
func TestLimitBoundsTheTable(t *testing.T) {
	g := NewWithT(t)
	tab := New(2)
	for _, s := range []string{"a", "b", "c", "d"} {
		g.Expect(tab.String(fresh(s))).To(Equal(s))
	}
	strs, _ := tab.Len()
	g.Expect(strs).To(Equal(2))
	c1, c2 := tab.String(fresh("c")), tab.String(fresh("c"))
	g.Expect(at(c1)).NotTo(Equal(at(c2)))
}
