package changelog

import (
	"math/rand/v2"
	"testing"
)

// Whatever the bytes, the reader ends with a segment or an error, never
// a panic, and within its bounds.
func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	w := NewWriter(Start{BaseRevision: 1, From: 2}, DefaultLimits)
	write(f, w, revisions(rng, 2, 20, t0))
	seg, err := w.Finish()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seg.Data)
	f.Add(seg.Data[:HeaderSize+10])
	f.Add(craft(Header{BaseRevision: 1, From: 2, To: 2, FromTime: t0, ToTime: t0, Events: 1, RawBytes: 7}, rec(1, []byte{itemDelete, 0, 1, 'k'})))
	lim := Limits{MaxRevisionBytes: 1 << 20, MaxRevisionEvents: 1000, MaxRawBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		var revs []Revision
		alloc := allocated(func() { h, revs, err = readAll(b, lim) })
		if err == nil && int64(len(revs)) != h.Revisions() {
			t.Fatalf("read %d revisions of a segment of %d", len(revs), h.Revisions())
		}
		if bound := uint64(lim.MaxRevisionBytes)*2 + 1<<20 + uint64(len(b))*4; alloc > bound {
			t.Fatalf("allocated %d bytes reading %d", alloc, len(b))
		}
	})
}
