package changelog

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// Start is where a new segment begins in its chain.
type Start struct {
	Seq          int64
	BaseRevision int64
	// From is the revision the segment must start with.
	From      int64
	ClusterID uint64
	// Prev is the sha256 of the previous segment (for seq 0, of the base
	// Backup's snapshot).
	Prev [sha256.Size]byte
	// NotBefore is the time of the chain's previous revision: the
	// segment's times may not go below it.
	NotBefore time.Time
}

// Segment is a finished segment: its header, its bytes (the header
// included) and their sha256.
type Segment struct {
	Header Header
	Data   []byte
	SHA256 [sha256.Size]byte
}

// Writer builds one segment in memory, a revision at a time: Begin, the
// revision's Put, Delete and NoteLease, then End (or Abort, for a
// revision that will not be received whole). The body is compressed as
// it is written, so the memory held is the compressed segment plus the
// open revision's encoded items (at most Limits.MaxRevisionBytes).
type Writer struct {
	lim   Limits
	h     Header
	last  time.Time // time of the newest committed revision (or NotBefore)
	out   bytes.Buffer
	zw    *flate.Writer
	revs  int64
	key   []byte // previous key of the committed body
	open  bool
	item  []byte   // the open revision's encoded items
	done  *Segment // set by Finish
	okey  []byte   // previous key as of the open revision's last item
	oev   int64    // the open revision's events
	osize int64    // the open revision's size as a Reader charges it
	scrat [maxVarintLength]byte
}

// NewWriter starts a segment at s.
func NewWriter(s Start, lim Limits) *Writer {
	w := &Writer{lim: lim}
	w.Reset(s)
	return w
}

// Reset drops whatever w holds and starts a new segment at s.
func (w *Writer) Reset(s Start) {
	w.h = Header{Seq: s.Seq, BaseRevision: s.BaseRevision, From: s.From, To: s.From - 1, ClusterID: s.ClusterID, Prev: s.Prev}
	w.last = s.NotBefore
	w.out.Reset()
	w.out.Write(make([]byte, HeaderSize))
	if w.zw == nil {
		// BestSpeed: Kubernetes objects still shrink several times, at a
		// fraction of the default level's CPU. The level is valid.
		w.zw, _ = flate.NewWriter(&w.out, flate.BestSpeed)
	} else {
		w.zw.Reset(&w.out)
	}
	w.revs, w.key, w.open, w.done = 0, w.key[:0], false, nil
}

// Next is the revision the next Begin must name.
func (w *Writer) Next() int64 { return w.h.To + 1 }

// Revisions is how many whole revisions the segment holds.
func (w *Writer) Revisions() int64 { return w.revs }

// RawBytes is the size of the segment's decompressed body so far.
func (w *Writer) RawBytes() int64 { return w.h.RawBytes }

// OpenBytes is the size of the open revision so far, as the bound
// Limits.MaxRevisionBytes counts it.
func (w *Writer) OpenBytes() int64 { return recordOverhead + int64(len(w.item)) + w.osize }

// recordOverhead is the most a record adds to its items: the revision and
// time deltas and the end byte.
const recordOverhead = 2*maxVarintLength + 1

// Last is the time of the newest revision written (or NotBefore).
func (w *Writer) Last() time.Time { return w.last }

// Begin opens revision rev, which must be Next: a later one is a gap, an
// earlier one an overlap.
func (w *Writer) Begin(rev int64) error {
	switch {
	case w.done != nil:
		return fmt.Errorf("changelog: revision %d begun in a finished segment", rev)
	case w.open:
		return fmt.Errorf("changelog: revision %d begun while %d is open", rev, w.Next())
	case rev > w.Next():
		return fmt.Errorf("%w: revision %d follows %d", ErrGap, rev, w.h.To)
	case rev < w.Next():
		return fmt.Errorf("%w: revision %d again after %d", ErrOverlap, rev, w.h.To)
	}
	w.open, w.item, w.oev, w.osize = true, w.item[:0], 0, 0
	w.okey = append(w.okey[:0], w.key...)
	return nil
}

// Put records a put of key to value, attached to lease (0: none).
func (w *Writer) Put(key, value []byte, lease int64) error {
	t := itemPut
	if lease != 0 {
		t = itemLeasedPut
	}
	w.item = append(w.item, t)
	w.appendKey(key)
	w.item = binary.AppendUvarint(w.item, uint64(len(value)))
	w.item = append(w.item, value...)
	if lease != 0 {
		w.item = binary.AppendUvarint(w.item, uint64(lease))
	}
	return w.counted(1)
}

// Delete records a deletion of key.
func (w *Writer) Delete(key []byte) error {
	w.item = append(w.item, itemDelete)
	w.appendKey(key)
	return w.counted(1)
}

// NoteLease records the TTL lease id was granted with (0: unknown).
func (w *Writer) NoteLease(id, ttl int64) error {
	if id <= 0 || ttl < 0 || ttl > maxLeaseTTL {
		return fmt.Errorf("changelog: lease note %d with TTL %d", id, ttl)
	}
	w.item = append(w.item, itemLeaseNote)
	w.item = binary.AppendUvarint(w.item, uint64(id))
	w.item = binary.AppendUvarint(w.item, uint64(ttl))
	return w.counted(0)
}

// End commits the open revision, received whole at t (the previous
// revision's time if t is earlier: the capture's clock may step back,
// the chain's times may not).
func (w *Writer) End(t time.Time) error {
	if !w.open {
		return fmt.Errorf("changelog: End without Begin")
	}
	if w.oev == 0 {
		return fmt.Errorf("%w: revision %d has no events", ErrCorrupt, w.Next())
	}
	t = t.Truncate(time.Millisecond)
	if t.Before(w.last) {
		t = w.last
	}
	if w.revs == 0 {
		w.h.FromTime = t
	}
	head := binary.AppendVarint(w.scrat[:0], 1)
	head = binary.AppendUvarint(head, uint64(t.UnixMilli()-w.prevTime().UnixMilli()))
	if size := w.h.RawBytes + int64(len(head)+len(w.item)+1); size > w.lim.MaxRawBytes {
		return fmt.Errorf("%w: revision %d would make the segment %d bytes, at most %d", ErrTooLarge, w.Next(), size, w.lim.MaxRawBytes)
	}
	for _, b := range [][]byte{head, w.item, {itemEnd}} {
		if _, err := w.zw.Write(b); err != nil {
			return fmt.Errorf("changelog: compress: %w", err)
		}
		w.h.RawBytes += int64(len(b))
	}
	w.h.To++
	w.h.ToTime, w.last = t, t
	w.h.Events += w.oev
	w.revs++
	w.key = append(w.key[:0], w.okey...)
	w.open = false
	return nil
}

// Abort drops the open revision.
func (w *Writer) Abort() { w.open, w.item = false, w.item[:0] }

// Finish closes the segment, which must hold at least one revision and
// none open; called again, it returns the same segment (an upload that
// failed is tried again with the same bytes). The Writer must be Reset
// before it takes revisions again.
func (w *Writer) Finish() (Segment, error) {
	if w.done != nil {
		return *w.done, nil
	}
	if w.open || w.revs == 0 {
		return Segment{}, fmt.Errorf("changelog: finish a segment of %d revisions (one open: %v)", w.revs, w.open)
	}
	if err := w.zw.Close(); err != nil {
		return Segment{}, fmt.Errorf("changelog: compress: %w", err)
	}
	data := w.out.Bytes()
	copy(data, w.h.marshal())
	w.done = &Segment{Header: w.h, Data: data, SHA256: sha256.Sum256(data)}
	return *w.done, nil
}

// prevTime is the time the next record's delta counts from.
func (w *Writer) prevTime() time.Time {
	if w.revs == 0 {
		return w.h.FromTime
	}
	return w.h.ToTime
}

func (w *Writer) appendKey(key []byte) {
	shared := 0
	for shared < len(key) && shared < len(w.okey) && key[shared] == w.okey[shared] {
		shared++
	}
	w.osize += int64(shared)
	w.item = binary.AppendUvarint(w.item, uint64(shared))
	w.item = binary.AppendUvarint(w.item, uint64(len(key)-shared))
	w.item = append(w.item, key[shared:]...)
	w.okey = append(w.okey[:0], key...)
}

// counted adds events to the open revision and checks its bounds.
func (w *Writer) counted(events int64) error {
	if !w.open {
		return fmt.Errorf("changelog: item outside a revision")
	}
	w.oev += events
	if w.OpenBytes() > w.lim.MaxRevisionBytes || w.oev > w.lim.MaxRevisionEvents {
		return fmt.Errorf("%w: revision %d holds more than %d bytes or %d events", ErrTooLarge, w.Next(), w.lim.MaxRevisionBytes, w.lim.MaxRevisionEvents)
	}
	return nil
}
