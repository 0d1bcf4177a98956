package changelog

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)

// revisions makes n revisions from rev on, one every 7 ms, with puts,
// leased puts, multi-key transactions, deletes and lease notes, keys
// sharing Kubernetes-like prefixes.
func revisions(rng *rand.Rand, from int64, n int, at time.Time) []Revision {
	var out []Revision
	for i := range n {
		rv := Revision{Revision: from + int64(i), Time: at.Add(time.Duration(i) * 7 * time.Millisecond)}
		for j := range 1 + rng.IntN(3) {
			key := []byte(fmt.Sprintf("/registry/pods/ns-%d/pod-%d-%d", rng.IntN(5), i, j))
			switch rng.IntN(4) {
			case 0:
				rv.Events = append(rv.Events, Event{Type: Delete, Key: key})
			case 1:
				id := int64(1<<40 + rng.IntN(3))
				rv.Events = append(rv.Events, Event{Type: Put, Key: key, Value: bytes.Repeat([]byte{byte(i)}, rng.IntN(300)), Lease: id})
				rv.Leases = append(rv.Leases, LeaseNote{ID: id, TTL: 3600})
			default:
				rv.Events = append(rv.Events, Event{Type: Put, Key: key, Value: []byte(fmt.Sprintf(`{"i":%d,"j":%d}`, i, j))})
			}
		}
		out = append(out, rv)
	}
	return out
}

func write(t testing.TB, w *Writer, revs []Revision) {
	t.Helper()
	for _, rv := range revs {
		if err := w.Begin(rv.Revision); err != nil {
			t.Fatal(err)
		}
		for _, n := range rv.Leases {
			if err := w.NoteLease(n.ID, n.TTL); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range rv.Events {
			var err error
			if ev.Type == Delete {
				err = w.Delete(ev.Key)
			} else {
				err = w.Put(ev.Key, ev.Value, ev.Lease)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.End(rv.Time); err != nil {
			t.Fatal(err)
		}
	}
}

func readAll(data []byte, lim Limits) (Header, []Revision, error) {
	r, err := NewReader(bytes.NewReader(data), lim)
	if err != nil {
		return Header{}, nil, err
	}
	var out []Revision
	for {
		rv, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, rv)
	}
}

// What the Writer writes the Reader reads back exactly, with the header
// describing it; an aborted revision leaves no trace.
func TestSegmentRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	revs := revisions(rng, 101, 200, t0)
	w := NewWriter(Start{Seq: 3, BaseRevision: 100, From: 101, ClusterID: 0xabc, Prev: [32]byte{9}}, DefaultLimits)
	write(t, w, revs[:50])
	// A revision that will not be received whole.
	if err := w.Begin(151); err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]byte("/registry/aborted"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	write(t, w, revs[50:])
	seg, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := w.Finish(); err != nil || !bytes.Equal(again.Data, seg.Data) || again.SHA256 != seg.SHA256 {
		t.Fatalf("a second Finish gave another segment (%v)", err)
	}
	h, got, err := readAll(seg.Data, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, rv := range revs {
		events += len(rv.Events)
	}
	want := Header{Seq: 3, BaseRevision: 100, From: 101, To: 300, FromTime: t0, ToTime: revs[199].Time, Events: int64(events),
		RawBytes: seg.Header.RawBytes, ClusterID: 0xabc, Prev: [32]byte{9}}
	if h != want || seg.Header != want {
		t.Fatalf("header %+v\nwant   %+v", h, want)
	}
	if !reflect.DeepEqual(got, normalise(revs)) {
		t.Fatalf("read back %d revisions that differ from the %d written", len(got), len(revs))
	}
	t.Logf("%d events in %d bytes (%d raw)", events, len(seg.Data), seg.Header.RawBytes)
}

// normalise makes written revisions compare with read ones: an empty
// value reads as an empty slice.
func normalise(revs []Revision) []Revision {
	for i := range revs {
		for j, ev := range revs[i].Events {
			if ev.Type == Put && ev.Value == nil {
				revs[i].Events[j].Value = []byte{}
			}
		}
	}
	return revs
}

// The Writer refuses what would break the format: a revision out of
// turn, a revision without events, one above its bound; times never go
// back even when the clock does.
func TestWriterRefuses(t *testing.T) {
	lim := Limits{MaxRevisionBytes: 1024, MaxRevisionEvents: 4, MaxRawBytes: 1 << 20}
	w := NewWriter(Start{BaseRevision: 10, From: 11, NotBefore: t0}, lim)
	if err := w.Begin(12); !errors.Is(err, ErrGap) {
		t.Fatalf("Begin(12) = %v, want ErrGap", err)
	}
	if err := w.Begin(10); !errors.Is(err, ErrOverlap) {
		t.Fatalf("Begin(10) = %v, want ErrOverlap", err)
	}
	if err := w.Begin(11); err != nil {
		t.Fatal(err)
	}
	if err := w.End(t0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("End of an empty revision = %v", err)
	}
	if err := w.Put([]byte("k"), make([]byte, 2000), 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 2000-byte value under a 1024-byte bound = %v", err)
	}
	w.Abort()
	if err := w.Begin(11); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		err := w.Delete([]byte{byte('a' + i)})
		if (i == 4) != errors.Is(err, ErrTooLarge) {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	w.Abort()
	write(t, w, []Revision{{Revision: 11, Time: t0.Add(-time.Hour), Events: []Event{{Type: Delete, Key: []byte("k")}}}})
	seg, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !seg.Header.FromTime.Equal(t0) {
		t.Fatalf("a revision received 'before' the previous one got time %s, want %s", seg.Header.FromTime, t0)
	}
}

// craft is a segment with header h and body (compressed as the Writer
// does), for bytes no Writer makes.
func craft(h Header, body []byte) []byte {
	var out bytes.Buffer
	out.Write(h.marshal())
	zw, _ := flate.NewWriter(&out, flate.BestSpeed)
	zw.Write(body)
	zw.Close()
	return out.Bytes()
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func rec(delta int64, items ...[]byte) []byte {
	b := binary.AppendVarint(nil, delta)
	b = append(b, 0)
	for _, it := range items {
		b = append(b, it...)
	}
	return append(b, itemEnd)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// A hostile or corrupt segment is refused with a typed error, and what
// the reader allocates stays within one revision's bound whatever the
// segment claims.
func TestReaderRefusesHostileSegments(t *testing.T) {
	lim := Limits{MaxRevisionBytes: 64 << 10, MaxRevisionEvents: 100, MaxRawBytes: 1 << 20}
	del := func(key string) []byte { return cat([]byte{itemDelete}, uv(0), uv(uint64(len(key))), []byte(key)) }
	h := func(to, events, raw int64) Header {
		return Header{Seq: 0, BaseRevision: 1, From: 2, To: to, FromTime: t0, ToTime: t0, Events: events, RawBytes: raw}
	}
	one := rec(1, del("k"))
	// Each event shares the whole previous key (64 KiB - a little) and
	// adds nothing: 3 bytes claiming 60 KiB each.
	bigKey := bytes.Repeat([]byte("k"), 60<<10)
	shareAll := cat([]byte{itemDelete}, uv(uint64(len(bigKey))), uv(0))
	bomb := bytes.Repeat([]byte{0}, 1<<20)
	twoEvents := rec(1, del("k"), del("j"))
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"short", []byte(Magic), ErrCorrupt},
		{"wrong magic", cat([]byte("EBDCHG\x00\x02"), make([]byte, HeaderSize)), ErrCorrupt},
		{"body above the bound", craft(h(2, 1, 2<<20), one), ErrTooLarge},
		{"more revisions than bytes", craft(h(1000, 1000, int64(len(one))), one), ErrCorrupt},
		{"value claiming a terabyte", craft(h(2, 1, 100), rec(1, cat([]byte{itemPut}, uv(0), uv(1), []byte("k"), uv(1<<40)))), ErrTooLarge},
		{"shared prefixes claiming more than the bound", craft(h(3, 20, 100000), cat(rec(1, cat([]byte{itemDelete}, uv(0), uv(uint64(len(bigKey))), bigKey)),
			rec(1, bytes.Repeat(shareAll, 10)))), ErrTooLarge},
		{"more events than the bound", craft(h(2, 101, 2000), rec(1, bytes.Repeat(del("k"), 101))), ErrTooLarge},
		{"body inflating past the header", craft(h(2, 1, int64(len(one))), cat(one, bomb)), ErrCorrupt},
		{"body shorter than the header", craft(h(2, 1, int64(len(one))+5), one), ErrCorrupt},
		{"bytes after the body", cat(craft(h(2, 1, int64(len(one))), one), []byte("tail")), ErrCorrupt},
		{"revision repeated", craft(h(3, 2, 2*int64(len(one))), cat(one, rec(0, del("k")))), ErrOverlap},
		{"revision going back", craft(h(3, 2, 2*int64(len(one))), cat(one, rec(-1, del("k")))), ErrOutOfOrder},
		{"revision skipped", craft(h(3, 2, 2*int64(len(one))), cat(one, rec(2, del("k")))), ErrGap},
		{"more events than the header", craft(h(2, 1, int64(len(twoEvents))), twoEvents), ErrCorrupt},
		{"unknown item", craft(h(2, 1, 4), rec(1, []byte{0x7f})), ErrCorrupt},
		{"shared prefix longer than the previous key", craft(h(2, 1, 6), rec(1, cat([]byte{itemDelete}, uv(5), uv(0)))), ErrCorrupt},
		{"a revision without events", craft(h(2, 1, 3), rec(1)), ErrCorrupt},
		{"not deflate", cat(h(2, 1, 10).marshal(), []byte{0xff, 0xff, 0xff}), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got error
			alloc := allocated(func() { _, _, got = readAll(tc.data, lim) })
			t.Logf("%v (allocated %d)", got, alloc)
			if !errors.Is(got, tc.want) {
				t.Fatalf("read = %v, want %v", got, tc.want)
			}
			// One revision's bound, the reader's buffers and the
			// inflater's window.
			if bound := uint64(lim.MaxRevisionBytes) + 256<<10; alloc > bound {
				t.Fatalf("allocated %d bytes reading %d, bound %d", alloc, len(tc.data), bound)
			}
		})
	}
}

// allocated is how many bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
