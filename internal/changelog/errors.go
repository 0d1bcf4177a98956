package changelog

import (
	"errors"
	"fmt"
)

// The ways a segment or a chain can be wrong. Each is distinct, so a
// caller (and a test) can tell them apart with errors.Is.
var (
	// ErrCorrupt: the bytes are not a segment of this format (bad magic,
	// an impossible header, a record that does not decode, counts that
	// disagree with the header).
	ErrCorrupt = errors.New("not a valid change segment")
	// ErrTooLarge: a segment, a revision or a field is above Limits.
	ErrTooLarge = errors.New("change segment above its bounds")
	// ErrChecksum: the bytes' sha256 is not the one recorded beside them.
	ErrChecksum = errors.New("change segment's sha256 is not the recorded one")
	// ErrOutOfOrder: a revision goes backwards, or a segment is not the
	// one its place in the chain calls for (swapped or reordered).
	ErrOutOfOrder = errors.New("change out of order")
	// ErrGap: revisions are missing between two that follow each other.
	ErrGap = errors.New("changes missing: a gap in the revisions")
	// ErrOverlap: a revision appears twice.
	ErrOverlap = errors.New("changes repeated: revisions overlap")
	// ErrChainBroken: a segment does not carry the sha256 of the one
	// before it (or the index's newest segment is not the one read).
	ErrChainBroken = errors.New("change chain broken")
	// ErrMissing: a segment the index counts is not in the store.
	ErrMissing = errors.New("change segment missing")
	// ErrForeignChain: the segment or index belongs to another chain
	// (another base revision, base snapshot or etcd cluster).
	ErrForeignChain = errors.New("change segment of another chain")
	// ErrBaseMismatch: the base snapshot is not the one the chain follows
	// (another sha256, or it restores at another revision).
	ErrBaseMismatch = errors.New("the base snapshot is not the chain's base")
	// ErrDiverged: a replay of the chain did not answer a revision with
	// its captured number (the chain does not fit its base).
	ErrDiverged = errors.New("the replay diverged from the captured revisions")
)

// SegmentError names the segment an error is about.
type SegmentError struct {
	Seq int64
	// Key is the segment's object key, when it came from a store.
	Key string
	Err error
}

func (e *SegmentError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("segment %d (%s): %v", e.Seq, e.Key, e.Err)
	}
	return fmt.Sprintf("segment %d: %v", e.Seq, e.Err)
}

func (e *SegmentError) Unwrap() error { return e.Err }
