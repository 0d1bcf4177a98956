package changelog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrOutsideWindow: the target is before the chain's base or after what
// the chain proves.
var ErrOutsideWindow = errors.New("target outside the chain's window")

// Target is a point to restore to: exactly one of Revision and Time.
// A Time names the newest revision the capture received at or before it.
type Target struct {
	Revision int64
	Time     time.Time
}

func (t Target) String() string {
	if t.Revision > 0 {
		return fmt.Sprintf("revision %d", t.Revision)
	}
	return t.Time.UTC().Format(time.RFC3339Nano)
}

// Check refuses a target that names nothing or two things.
func (t Target) Check() error {
	if (t.Revision > 0) == !t.Time.IsZero() || t.Revision < 0 {
		return fmt.Errorf("a target is exactly one of a positive revision and a time")
	}
	return nil
}

// Want is Store.Fetch's predicate for t: the segments after one whose
// header is h are needed while h does not reach past t.
func (t Target) Want(h Header) bool {
	if t.Revision > 0 {
		return h.To < t.Revision
	}
	return !h.ToTime.After(t.Time)
}

// Resolve finds the revision t names in c, fetched by idx, and the time
// the capture received it (zero for the base). A time is inside the
// window when the chain proves nothing else came by then: a later
// revision received after it, or the index's confirmation that the etcd
// was still quiet.
func Resolve(c Chain, idx Index, t Target, lim Limits) (Point, error) {
	if err := t.Check(); err != nil {
		return Point{}, err
	}
	newest, _ := c.Newest()
	if t.Revision > 0 {
		if t.Revision < c.Base.Revision || t.Revision > newest {
			return Point{}, fmt.Errorf("%w: revision %d is not in %d..%d", ErrOutsideWindow, t.Revision, c.Base.Revision, newest)
		}
		return find(c, lim, func(r Revision) bool { return r.Revision <= t.Revision })
	}
	p, err := find(c, lim, func(r Revision) bool { return !r.Time.After(t.Time) })
	if err != nil || p.Revision < newest || (p.Time != nil && p.Time.Equal(t.Time)) {
		return p, err
	}
	if int64(len(c.Segments)) < idx.Segments {
		return Point{}, fmt.Errorf("%w: the chain was fetched only up to revision %d", ErrOutsideWindow, newest)
	}
	if idx.ConfirmedAt == nil || t.Time.After(*idx.ConfirmedAt) {
		last := "the base"
		if p.Time != nil {
			last = p.Time.UTC().Format(time.RFC3339Nano)
		}
		return Point{}, fmt.Errorf("%w: %s is after the newest durable change (revision %d, %s) and nothing confirms the etcd was quiet until then", ErrOutsideWindow, t, newest, last)
	}
	return p, nil
}

// find is the newest revision of c that ok accepts (ok accepts a prefix
// of the chain), or the base.
func find(c Chain, lim Limits, ok func(Revision) bool) (Point, error) {
	p := Point{Revision: c.Base.Revision}
	for _, s := range c.Segments {
		h := s.Header
		if !ok(Revision{Revision: h.From, Time: h.FromTime}) {
			break
		}
		if ok(Revision{Revision: h.To, Time: h.ToTime}) {
			t := h.ToTime
			p = Point{Revision: h.To, Time: &t}
			continue
		}
		err := scan(s, lim, func(r Revision) bool {
			if !ok(r) {
				return false
			}
			t := r.Time
			p = Point{Revision: r.Revision, Time: &t}
			return true
		})
		return p, err
	}
	return p, nil
}

// scan reads a verified segment's revisions until each returns false.
func scan(s Verified, lim Limits, each func(Revision) bool) error {
	f, err := os.Open(s.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := NewReader(f, lim)
	if err != nil {
		return &SegmentError{Seq: s.Seq, Key: s.Key, Err: err}
	}
	for {
		rv, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &SegmentError{Seq: s.Seq, Key: s.Key, Err: err}
		}
		if !each(rv) {
			return nil
		}
	}
}
