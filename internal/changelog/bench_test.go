package changelog

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/kubewrites"
)

// Bytes stored per change and the CPU to encode one, on writes shaped
// like a Kubernetes control plane's (test/kubewrites), one revision
// each, in segments cut at the capture's default 4 MiB. Reported:
// ns/op (CPU per change), stored-B/change (the segment objects),
// raw-B/change (before compression) and input-B/change (keys and
// values as etcd holds them).
func BenchmarkSegmentBytesPerChange(b *testing.B) {
	pool := kubewrites.Writes(1, 20_000)
	var input int64
	for _, w := range pool {
		input += int64(len(w.Key) + len(w.Value))
	}
	lim := DefaultLimits
	w := NewWriter(Start{BaseRevision: 1, From: 2}, lim)
	at := time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)
	var stored, raw int64
	seal := func() {
		seg, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		stored += int64(len(seg.Data))
		raw += seg.Header.RawBytes
		w.Reset(Start{Seq: seg.Header.Seq + 1, BaseRevision: 1, From: seg.Header.To + 1, Prev: sha256.Sum256(seg.Data), NotBefore: seg.Header.ToTime})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := pool[i%len(pool)]
		if err := w.Begin(w.Next()); err != nil {
			b.Fatal(err)
		}
		var err error
		switch {
		case c.Delete:
			err = w.Delete([]byte(c.Key))
		case c.LeaseTTL != 0:
			err = w.Put([]byte(c.Key), c.Value, 1<<40+int64(i/600))
		default:
			err = w.Put([]byte(c.Key), c.Value, 0)
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := w.End(at.Add(time.Duration(i) * 100 * time.Millisecond)); err != nil {
			b.Fatal(err)
		}
		if w.RawBytes() >= 4<<20 {
			seal()
		}
	}
	if w.Revisions() > 0 {
		seal()
	}
	b.StopTimer()
	b.ReportMetric(float64(stored)/float64(b.N), "stored-B/change")
	b.ReportMetric(float64(raw)/float64(b.N), "raw-B/change")
	b.ReportMetric(float64(input)/float64(len(pool)), "input-B/change")
}
