package intern

import (
	"fmt"
	"runtime"
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
	tab := New()
	a, b := tab.String(fresh("tenant-a")), tab.String(fresh("tenant-a"))
	g.Expect(a).To(Equal("tenant-a"))
	g.Expect(at(a)).To(Equal(at(b)))
	g.Expect(tab.String("")).To(BeEmpty())
	g.Expect(tab.String("a constant")).To(Equal("a constant"), "a string that is not on the heap is copied, not referenced")

	x, y := tab.Bytes([]byte(`{"k":1}`)), tab.Bytes([]byte(`{"k":1}`))
	g.Expect(string(y)).To(Equal(`{"k":1}`))
	g.Expect(uintptr(unsafe.Pointer(&x[0]))).To(Equal(uintptr(unsafe.Pointer(&y[0]))))
	runtime.KeepAlive(a)
	runtime.KeepAlive(x)
}

// A value stays shared only while something holds it: once the objects
// holding 8 MiB of unique values are gone, so are the values and the
// Table's entries for them, however many there were.
func TestValuesNoOneHoldsAreDropped(t *testing.T) {
	g := NewWithT(t)
	tab := New()
	kept := tab.String(fresh("kept"))
	held := make([]string, 0, 2048)
	for i := range 2048 {
		held = append(held, tab.String(fmt.Sprintf("%04d%s", i, strings.Repeat("v", 4092))))
	}
	g.Expect(tab.Len()).To(Equal(2049))
	again := tab.String(fresh(held[7]))
	g.Expect(at(again)).To(Equal(at(held[7])))
	runtime.KeepAlive(held)
	held, again = nil, ""

	runtime.GC()
	runtime.GC()
	g.Expect(tab.Len()).To(Equal(1), "only the value still held is shared")
	g.Expect(at(tab.String(fresh("kept")))).To(Equal(at(kept)))
	runtime.KeepAlive(kept)
}
