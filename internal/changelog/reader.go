package changelog

import (
	"bufio"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Reader decodes one segment as a stream, a revision at a time, and
// checks it against its header as it goes: every revision follows the
// one before, times never go back, and when Next returns io.EOF the
// segment held exactly the revisions, events and bytes its header says,
// and nothing after them. It holds at most one revision (Limits).
type Reader struct {
	h      Header
	lim    Limits
	stored *bufio.Reader // the object after its header
	zr     io.ReadCloser
	body   *bufio.Reader // the decompressed body, at most h.RawBytes
	limit  *io.LimitedReader
	rev    int64
	ms     int64
	events int64
	key    []byte
	done   bool
}

// NewReader reads a segment's header from r and prepares to decode its
// body.
func NewReader(r io.Reader, lim Limits) (*Reader, error) {
	b := make([]byte, HeaderSize)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: shorter than a header", ErrCorrupt)
		}
		return nil, err
	}
	h, err := ParseHeader(b, lim)
	if err != nil {
		return nil, err
	}
	// flate reads through an io.ByteReader without buffering ahead, so
	// what it leaves unread of stored is what follows its stream.
	stored := bufio.NewReader(r)
	zr := flate.NewReader(stored)
	limit := &io.LimitedReader{R: zr, N: h.RawBytes}
	return &Reader{h: h, lim: lim, stored: stored, zr: zr, limit: limit, body: bufio.NewReader(limit),
		rev: h.From - 1, ms: h.FromTime.UnixMilli()}, nil
}

// Header is the segment's header.
func (r *Reader) Header() Header { return r.h }

// Next returns the next revision, or io.EOF after the last one once the
// segment is proven whole.
func (r *Reader) Next() (Revision, error) {
	if r.done {
		return Revision{}, io.EOF
	}
	if r.rev == r.h.To {
		if err := r.end(); err != nil {
			return Revision{}, err
		}
		r.done = true
		return Revision{}, io.EOF
	}
	rv, err := r.record()
	if err != nil {
		return Revision{}, fmt.Errorf("revision %d: %w", r.rev+1, err)
	}
	return rv, nil
}

func (r *Reader) record() (Revision, error) {
	budget := &budget{r: r.body, left: r.lim.MaxRevisionBytes}
	delta, err := binary.ReadVarint(budget)
	if err != nil {
		return Revision{}, r.bodyErr(err)
	}
	switch {
	case delta < 0:
		return Revision{}, fmt.Errorf("%w: goes back %d revisions", ErrOutOfOrder, -delta)
	case delta == 0:
		return Revision{}, fmt.Errorf("%w: revision %d repeated", ErrOverlap, r.rev)
	case delta > 1:
		return Revision{}, fmt.Errorf("%w: %d revisions skipped after %d", ErrGap, delta-1, r.rev)
	}
	ms, err := binary.ReadUvarint(budget)
	if err != nil {
		return Revision{}, r.bodyErr(err)
	}
	if ms > uint64(r.h.ToTime.UnixMilli()-r.ms) {
		return Revision{}, fmt.Errorf("%w: received after the segment's last time", ErrCorrupt)
	}
	rv := Revision{Revision: r.rev + 1, Time: time.UnixMilli(r.ms + int64(ms)).UTC()}
	key := r.key
	for {
		t, err := budget.ReadByte()
		if err != nil {
			return Revision{}, r.bodyErr(err)
		}
		switch t {
		case itemEnd:
			if len(rv.Events) == 0 {
				return Revision{}, fmt.Errorf("%w: a revision without events", ErrCorrupt)
			}
			if rv.Revision == r.h.From && ms != 0 {
				return Revision{}, fmt.Errorf("%w: first revision not received at the segment's first time", ErrCorrupt)
			}
			if rv.Revision == r.h.To && rv.Time.UnixMilli() != r.h.ToTime.UnixMilli() {
				return Revision{}, fmt.Errorf("%w: last revision not received at the segment's last time", ErrCorrupt)
			}
			if r.events+int64(len(rv.Events)) > r.h.Events {
				return Revision{}, fmt.Errorf("%w: more events than the header's %d", ErrCorrupt, r.h.Events)
			}
			r.rev, r.ms, r.key = rv.Revision, rv.Time.UnixMilli(), key
			r.events += int64(len(rv.Events))
			return rv, nil
		case itemLeaseNote:
			n, err := r.leaseNote(budget)
			if err != nil {
				return Revision{}, err
			}
			rv.Leases = append(rv.Leases, n)
			continue
		case itemPut, itemLeasedPut, itemDelete:
		default:
			return Revision{}, fmt.Errorf("%w: unknown item %#x", ErrCorrupt, t)
		}
		if int64(len(rv.Events)) >= r.lim.MaxRevisionEvents {
			return Revision{}, fmt.Errorf("%w: more than %d events", ErrTooLarge, r.lim.MaxRevisionEvents)
		}
		ev := Event{Type: Put}
		if t == itemDelete {
			ev.Type = Delete
		}
		if ev.Key, err = readKey(budget, key); err != nil {
			return Revision{}, r.bodyErr(err)
		}
		key = ev.Key
		if t != itemDelete {
			if ev.Value, err = readBytes(budget); err != nil {
				return Revision{}, r.bodyErr(err)
			}
		}
		if t == itemLeasedPut {
			id, err := binary.ReadUvarint(budget)
			if err != nil {
				return Revision{}, r.bodyErr(err)
			}
			if id == 0 || id > 1<<63-1 {
				return Revision{}, fmt.Errorf("%w: lease ID %d", ErrCorrupt, id)
			}
			ev.Lease = int64(id)
		}
		rv.Events = append(rv.Events, ev)
	}
}

func (r *Reader) leaseNote(b *budget) (LeaseNote, error) {
	id, err := binary.ReadUvarint(b)
	if err != nil {
		return LeaseNote{}, r.bodyErr(err)
	}
	ttl, err := binary.ReadUvarint(b)
	if err != nil {
		return LeaseNote{}, r.bodyErr(err)
	}
	if id == 0 || id > 1<<63-1 || ttl > maxLeaseTTL {
		return LeaseNote{}, fmt.Errorf("%w: lease note %d, TTL %d", ErrCorrupt, id, ttl)
	}
	return LeaseNote{ID: int64(id), TTL: int64(ttl)}, nil
}

// end checks that the body and the object end where the header says.
func (r *Reader) end() error {
	if r.events != r.h.Events {
		return fmt.Errorf("%w: %d events, the header says %d", ErrCorrupt, r.events, r.h.Events)
	}
	if r.limit.N != 0 || r.body.Buffered() != 0 {
		return fmt.Errorf("%w: body is not the header's %d bytes", ErrCorrupt, r.h.RawBytes)
	}
	var one [1]byte
	if n, err := r.zr.Read(one[:]); n != 0 || !errors.Is(err, io.EOF) {
		if err != nil && !errors.Is(err, io.EOF) {
			return r.bodyErr(err)
		}
		return fmt.Errorf("%w: body longer than the header's %d bytes", ErrCorrupt, r.h.RawBytes)
	}
	if _, err := r.stored.ReadByte(); !errors.Is(err, io.EOF) {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: bytes after the body", ErrCorrupt)
	}
	return nil
}

// bodyErr sorts an error of reading the body: a short or undecodable
// stream is ErrCorrupt, a broken budget ErrTooLarge; anything else (the
// underlying reader's) passes through.
func (r *Reader) bodyErr(err error) error {
	var ce flate.CorruptInputError
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ce),
		// encoding/binary does not export its overflow error.
		strings.Contains(err.Error(), "varint overflows"):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return err
}

// budget bounds one revision: every byte read and every byte of a key's
// shared prefix (which the reader copies) is charged, so what a revision
// makes the reader allocate is at most Limits.MaxRevisionBytes, whatever
// the lengths it claims. The Writer charges the same.
type budget struct {
	r    *bufio.Reader
	left int64
}

func (b *budget) ReadByte() (byte, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: revision longer than its bound", ErrTooLarge)
	}
	c, err := b.r.ReadByte()
	if err == nil {
		b.left--
	}
	return c, err
}

// take reads n bytes after prefix into a new slice, once both are
// charged, so a hostile length allocates nothing.
func (b *budget) take(prefix []byte, n uint64) ([]byte, error) {
	if n > uint64(b.left) || uint64(len(prefix)) > uint64(b.left)-n {
		return nil, fmt.Errorf("%w: a field of %d bytes in a revision with %d left", ErrTooLarge, uint64(len(prefix))+n, b.left)
	}
	b.left -= int64(len(prefix))
	out := make([]byte, len(prefix)+int(n))
	copy(out, prefix)
	if _, err := io.ReadFull(b.r, out[len(prefix):]); err != nil {
		return nil, err
	}
	b.left -= int64(n)
	return out, nil
}

func readBytes(b *budget) ([]byte, error) {
	n, err := binary.ReadUvarint(b)
	if err != nil {
		return nil, err
	}
	return b.take(nil, n)
}

func readKey(b *budget, prev []byte) ([]byte, error) {
	shared, err := binary.ReadUvarint(b)
	if err != nil {
		return nil, err
	}
	if shared > uint64(len(prev)) {
		return nil, fmt.Errorf("%w: key shares %d bytes of a %d-byte key", ErrCorrupt, shared, len(prev))
	}
	n, err := binary.ReadUvarint(b)
	if err != nil {
		return nil, err
	}
	k, err := b.take(prev[:shared], n)
	if err == nil && len(k) == 0 {
		err = fmt.Errorf("%w: empty key", ErrCorrupt)
	}
	return k, err
}
