package changelog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Base is what a chain follows: the base Backup's revision and the
// sha256 of its snapshot (lower-case hex), which segment 0 carries as
// its Prev.
type Base struct {
	Revision int64  `json:"revision"`
	SHA256   string `json:"sha256"`
}

// Check refuses a base no Backup can have.
func (b Base) Check() error {
	if b.Revision < 1 {
		return fmt.Errorf("base revision %d: must be positive", b.Revision)
	}
	if _, err := parseSum(b.SHA256); err != nil {
		return fmt.Errorf("base sha256: %w", err)
	}
	return nil
}

// Stored is one segment as fetched from its store: its bytes in a local
// file and the sha256 the store recorded beside them.
type Stored struct {
	Seq            int64
	Key            string
	Path           string
	RecordedSHA256 string
}

// Verified is a stored segment that passed the Verifier.
type Verified struct {
	Stored
	Header Header
	SHA256 string
	Size   int64
}

// Chain is a verified run of segments from the base on.
type Chain struct {
	Base     Base
	Segments []Verified
}

// Newest is the chain's newest revision and its time (the base's
// revision and the zero time when it holds no segment).
func (c Chain) Newest() (int64, time.Time) {
	if len(c.Segments) == 0 {
		return c.Base.Revision, time.Time{}
	}
	h := c.Segments[len(c.Segments)-1].Header
	return h.To, h.ToTime
}

// Verifier checks segments one at a time, in chain order, each against
// the one before: the bytes against their recorded sha256, then the
// header (chain, place, link, revisions, time), then every record.
type Verifier struct {
	lim     Limits
	chain   Chain
	cluster uint64
	prev    [sha256.Size]byte
	to      int64
	toTime  time.Time
}

// NewVerifier starts a chain at base.
func NewVerifier(base Base, lim Limits) (*Verifier, error) {
	sum, err := parseSum(base.SHA256)
	if err != nil {
		return nil, fmt.Errorf("base sha256: %w", err)
	}
	return &Verifier{lim: lim, chain: Chain{Base: base}, prev: sum, to: base.Revision}, nil
}

// Next is the sequence number and first revision of the segment Add
// expects.
func (v *Verifier) Next() (seq, from int64) { return int64(len(v.chain.Segments)), v.to + 1 }

// Chain is what has been verified so far.
func (v *Verifier) Chain() Chain { return v.chain }

// Add verifies s as the next segment. Its errors are *SegmentError.
func (v *Verifier) Add(s Stored) (Verified, error) {
	seq, _ := v.Next()
	vs, err := v.check(s, seq)
	if err != nil {
		return Verified{}, &SegmentError{Seq: s.Seq, Key: s.Key, Err: err}
	}
	v.chain.Segments = append(v.chain.Segments, vs)
	v.prev, _ = parseSum(vs.SHA256)
	v.to, v.toTime, v.cluster = vs.Header.To, vs.Header.ToTime, vs.Header.ClusterID
	return vs, nil
}

func (v *Verifier) check(s Stored, seq int64) (Verified, error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return Verified{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Verified{}, err
	}
	if st.Size() > v.lim.MaxStoredBytes() {
		return Verified{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, st.Size(), v.lim.MaxStoredBytes())
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Verified{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if s.RecordedSHA256 == "" {
		return Verified{}, fmt.Errorf("%w: none recorded", ErrChecksum)
	}
	if !strings.EqualFold(sum, s.RecordedSHA256) {
		return Verified{}, fmt.Errorf("%w: sha256 %s, %s recorded", ErrChecksum, sum, s.RecordedSHA256)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Verified{}, err
	}
	r, err := NewReader(f, v.lim)
	if err != nil {
		return Verified{}, err
	}
	hd := r.Header()
	if err := v.place(hd, seq); err != nil {
		return Verified{}, err
	}
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return Verified{}, err
		}
	}
	return Verified{Stored: s, Header: hd, SHA256: sum, Size: st.Size()}, nil
}

// place checks that a header is the one the chain calls for next.
func (v *Verifier) place(h Header, seq int64) error {
	switch {
	case h.BaseRevision != v.chain.Base.Revision:
		return fmt.Errorf("%w: follows base revision %d, not %d", ErrForeignChain, h.BaseRevision, v.chain.Base.Revision)
	case seq > 0 && h.ClusterID != v.cluster:
		return fmt.Errorf("%w: from etcd cluster %x, the chain's is %x", ErrForeignChain, h.ClusterID, v.cluster)
	case h.Seq != seq:
		return fmt.Errorf("%w: holds segment %d in the place of %d", ErrOutOfOrder, h.Seq, seq)
	case h.Prev != v.prev:
		return fmt.Errorf("%w: carries %s as the previous sha256, not %s", ErrChainBroken, h.PrevHex(), hex.EncodeToString(v.prev[:]))
	case h.From > v.to+1:
		return fmt.Errorf("%w: starts at revision %d, after %d", ErrGap, h.From, v.to)
	case h.From <= v.to:
		return fmt.Errorf("%w: starts at revision %d, %d is already held", ErrOverlap, h.From, v.to)
	case h.FromTime.Before(v.toTime):
		return fmt.Errorf("%w: received from %s, before the previous segment's %s", ErrOutOfOrder, h.FromTime.Format(time.RFC3339Nano), v.toTime.Format(time.RFC3339Nano))
	}
	return nil
}

// CheckIndex checks the verified chain against the index it was fetched
// by: the same base and cluster, and, when the chain reaches the index's
// newest segment, that segment's sha256.
func (v *Verifier) CheckIndex(idx Index) error {
	if idx.Base != v.chain.Base {
		return fmt.Errorf("%w: the index follows base %d (%s)", ErrForeignChain, idx.Base.Revision, idx.Base.SHA256)
	}
	n := int64(len(v.chain.Segments))
	if n > idx.Segments {
		return fmt.Errorf("%w: %d segments verified, the index counts %d", ErrChainBroken, n, idx.Segments)
	}
	if n == 0 {
		return nil
	}
	last := v.chain.Segments[n-1]
	if idx.ClusterID != ClusterHex(last.Header.ClusterID) {
		return &SegmentError{Seq: last.Seq, Key: last.Key, Err: fmt.Errorf("%w: from etcd cluster %x, the index's is %s", ErrForeignChain, last.Header.ClusterID, idx.ClusterID)}
	}
	if n == idx.Segments && !strings.EqualFold(last.SHA256, idx.Head.SHA256) {
		return &SegmentError{Seq: last.Seq, Key: last.Key, Err: fmt.Errorf("%w: the index's newest segment has sha256 %s, this one %s", ErrChainBroken, idx.Head.SHA256, last.SHA256)}
	}
	return nil
}

// Verify checks stored, segments 0, 1, ... of one chain, and the index
// they were fetched by. Nothing is trusted before it returns.
func Verify(base Base, stored []Stored, idx Index, lim Limits) (Chain, error) {
	v, err := NewVerifier(base, lim)
	if err != nil {
		return Chain{}, err
	}
	for _, s := range stored {
		if _, err := v.Add(s); err != nil {
			return Chain{}, err
		}
	}
	if err := v.CheckIndex(idx); err != nil {
		return Chain{}, err
	}
	return v.Chain(), nil
}

func parseSum(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size || strings.ToLower(s) != s {
		return sum, fmt.Errorf("%q is not 64 lower-case hex digits", s)
	}
	copy(sum[:], b)
	return sum, nil
}
