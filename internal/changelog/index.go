package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// IndexVersion is the version of the index this package writes and reads.
const IndexVersion = 1

// MaxIndexBytes bounds an index object: it names the newest segment
// only, so it stays this small however long the chain grows, and its
// rewrites cost the same at the first segment and the millionth.
const MaxIndexBytes = 16 << 10

// Index is the small object the capture rewrites after every segment
// (and, while the etcd is quiet, about once a minute): what a reader
// needs to find and bound a chain without listing the bucket.
type Index struct {
	Version int  `json:"version"`
	Base    Base `json:"base"`
	// ClusterID is the etcd cluster's ID in hex, known from the first
	// segment on.
	ClusterID string `json:"clusterID,omitempty"`
	// Segments counts the chain's durable segments: 0 .. Segments-1.
	Segments int64 `json:"segments"`
	// Head is the newest durable segment; nil when there is none.
	Head *Head `json:"head,omitempty"`
	// Newest is the newest durable revision and when the capture
	// received it (the base's revision and no time without segments).
	Newest Point `json:"newest"`
	// ConfirmedAt is when the capture last saw the etcd still at
	// Newest.Revision with nothing left to receive: every time up to it
	// is inside the window, though no revision came.
	ConfirmedAt *time.Time `json:"confirmedAt,omitempty"`
	// Gap, once set, ends the chain: the capture could not follow the
	// etcd past Newest and no segment will be added.
	Gap *Gap `json:"gap,omitempty"`
	// UpdatedAt is when the capture wrote this index.
	UpdatedAt time.Time `json:"updatedAt"`
}

// Head describes the newest durable segment.
type Head struct {
	Seq      int64     `json:"seq"`
	Key      string    `json:"key"`
	From     int64     `json:"from"`
	To       int64     `json:"to"`
	FromTime time.Time `json:"fromTime"`
	ToTime   time.Time `json:"toTime"`
	Events   int64     `json:"events"`
	Bytes    int64     `json:"bytes"`
	SHA256   string    `json:"sha256"`
}

// Point is a revision and when the capture received it.
type Point struct {
	Revision int64      `json:"revision"`
	Time     *time.Time `json:"time,omitempty"`
}

// Gap says why a chain ended.
type Gap struct {
	// Reason is a capture reason (internal/tenantjobs/capture).
	Reason string `json:"reason"`
	// At is when the capture found it.
	At      time.Time `json:"at"`
	Message string    `json:"message,omitempty"`
}

// NewIndex is the index of a chain with no segment yet.
func NewIndex(base Base, now time.Time) Index {
	return Index{Version: IndexVersion, Base: base, Newest: Point{Revision: base.Revision}, UpdatedAt: now.UTC()}
}

// WithSegment is idx after seg, stored at key, became its newest
// segment.
func (idx Index) WithSegment(seg Segment, key string, now time.Time) Index {
	h := seg.Header
	t := h.ToTime
	idx.ClusterID = ClusterHex(h.ClusterID)
	idx.Segments = h.Seq + 1
	idx.Head = &Head{Seq: h.Seq, Key: key, From: h.From, To: h.To, FromTime: h.FromTime, ToTime: h.ToTime,
		Events: h.Events, Bytes: int64(len(seg.Data)), SHA256: fmt.Sprintf("%x", seg.SHA256)}
	idx.Newest = Point{Revision: h.To, Time: &t}
	idx.ConfirmedAt = nil
	idx.UpdatedAt = now.UTC()
	return idx
}

// ClusterHex is an etcd cluster ID as the index writes it.
func ClusterHex(id uint64) string { return strconv.FormatUint(id, 16) }

// Marshal is the index's bytes.
func (idx Index) Marshal() []byte {
	b, err := json.Marshal(idx)
	if err != nil {
		// Strings, integers and times: cannot happen.
		panic(err)
	}
	return b
}

// ParseIndex reads an index and refuses anything that is not one
// complete, self-consistent index of this version.
func ParseIndex(b []byte) (Index, error) {
	if len(b) > MaxIndexBytes {
		return Index{}, fmt.Errorf("%w: index of %d bytes, at most %d", ErrTooLarge, len(b), MaxIndexBytes)
	}
	var idx Index
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return Index{}, fmt.Errorf("%w: index: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return Index{}, fmt.Errorf("%w: index followed by more data", ErrCorrupt)
	}
	if err := idx.check(); err != nil {
		return Index{}, fmt.Errorf("%w: index: %v", ErrCorrupt, err)
	}
	return idx, nil
}

func (idx Index) check() error {
	if idx.Version != IndexVersion {
		return fmt.Errorf("version %d, this reader knows %d", idx.Version, IndexVersion)
	}
	if err := idx.Base.Check(); err != nil {
		return err
	}
	h := idx.Head
	switch {
	case idx.Segments < 0:
		return fmt.Errorf("%d segments", idx.Segments)
	case (h == nil) != (idx.Segments == 0):
		return fmt.Errorf("%d segments and head %v", idx.Segments, h != nil)
	case h == nil && (idx.Newest.Revision != idx.Base.Revision || idx.Newest.Time != nil):
		return fmt.Errorf("newest revision %d without a segment", idx.Newest.Revision)
	case h == nil:
		return nil
	case h.Seq != idx.Segments-1 || h.From <= idx.Base.Revision || h.To < h.From || h.ToTime.Before(h.FromTime) || h.Events < 1 || h.Bytes < 1:
		return fmt.Errorf("head %+v does not fit %d segments after revision %d", *h, idx.Segments, idx.Base.Revision)
	case idx.Newest.Revision != h.To || idx.Newest.Time == nil || !idx.Newest.Time.Equal(h.ToTime):
		return fmt.Errorf("newest revision %d is not the head's %d", idx.Newest.Revision, h.To)
	case idx.ConfirmedAt != nil && idx.ConfirmedAt.Before(h.ToTime):
		return fmt.Errorf("confirmed at %s, before the head's last revision", idx.ConfirmedAt)
	}
	if _, err := parseSum(h.SHA256); err != nil {
		return fmt.Errorf("head sha256: %w", err)
	}
	if _, err := strconv.ParseUint(idx.ClusterID, 16, 64); err != nil {
		return fmt.Errorf("cluster ID %q", idx.ClusterID)
	}
	return nil
}
