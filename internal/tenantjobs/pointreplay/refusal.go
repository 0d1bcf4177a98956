package pointreplay

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Why a replay is refused (report.Reason): what is in S3, or the point
// asked for, cannot give the snapshot at the point, and a retry reads the
// same bytes. The driver shows the reason in the RestoreJob's condition.
const (
	// ReasonChainChecksum: a segment's bytes are not the sha256 recorded
	// beside them (corrupted).
	ReasonChainChecksum report.Reason = "ChainChecksumMismatch"
	// ReasonChainOutOfOrder: a segment is not the one its place calls for
	// (swapped, reordered, one left out), or its times go back.
	ReasonChainOutOfOrder report.Reason = "ChainOutOfOrder"
	// ReasonChainMissing: a segment the index counts is not in the store.
	ReasonChainMissing report.Reason = "ChainSegmentMissing"
	// ReasonChainBroken: a segment does not carry its predecessor's
	// sha256, or the index's newest segment is not the one read.
	ReasonChainBroken report.Reason = "ChainBroken"
	// ReasonChainGap: revisions are missing between two segments.
	ReasonChainGap report.Reason = "ChainGap"
	// ReasonChainOverlap: a revision appears twice.
	ReasonChainOverlap report.Reason = "ChainOverlap"
	// ReasonChainForeign: the chain or its index follows another base or
	// etcd cluster.
	ReasonChainForeign report.Reason = "ChainForeign"
	// ReasonChainCorrupt: a segment or the index is not of the format.
	ReasonChainCorrupt report.Reason = "ChainCorrupt"
	// ReasonChainTooLarge: a segment, revision or the index is above the
	// format's bounds.
	ReasonChainTooLarge report.Reason = "ChainTooLarge"
	// ReasonChainNoIndex: the chain has no index (nothing was captured).
	ReasonChainNoIndex report.Reason = "ChainNoIndex"
	// ReasonPointOutsideWindow: the chain does not prove the etcd's state
	// at the point (before the base, after the newest durable change).
	ReasonPointOutsideWindow report.Reason = "PointOutsideWindow"
	// ReasonChainBaseMismatch: the base snapshot is not the one the chain
	// follows.
	ReasonChainBaseMismatch report.Reason = "ChainBaseMismatch"
	// ReasonReplayDiverged: replayed, the chain did not give the captured
	// revisions (it does not fit its base).
	ReasonReplayDiverged report.Reason = "ReplayDiverged"
	// ReasonInvalidPoint: the step was given an unusable point.
	ReasonInvalidPoint report.Reason = "InvalidPoint"
)

// refusals maps each way a chain can be wrong to its reason; the first
// match wins.
var refusals = []struct {
	err    error
	reason report.Reason
}{
	{ErrInvalidPoint, ReasonInvalidPoint},
	{changelog.ErrNoIndex, ReasonChainNoIndex},
	{changelog.ErrChecksum, ReasonChainChecksum},
	{changelog.ErrOutOfOrder, ReasonChainOutOfOrder},
	{changelog.ErrMissing, ReasonChainMissing},
	{changelog.ErrChainBroken, ReasonChainBroken},
	{changelog.ErrGap, ReasonChainGap},
	{changelog.ErrOverlap, ReasonChainOverlap},
	{changelog.ErrForeignChain, ReasonChainForeign},
	{changelog.ErrCorrupt, ReasonChainCorrupt},
	{changelog.ErrTooLarge, ReasonChainTooLarge},
	{changelog.ErrOutsideWindow, ReasonPointOutsideWindow},
	{changelog.ErrBaseMismatch, ReasonChainBaseMismatch},
	{changelog.ErrDiverged, ReasonReplayDiverged},
}

// Refusal is the reason err (of Replay, or Bind's check) refuses the
// replay, and false when err is not the chain's fault (the store out of
// reach, the keys refused, the Pod's disk: OnDisk), which a retry may
// mend.
func Refusal(err error) (report.Reason, bool) {
	if err == nil || OnDisk(err) {
		return "", false
	}
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.reason, true
		}
	}
	return "", false
}

// diskError marks a failure of the Pod's own disk.
type diskError struct{ err error }

func (e diskError) Error() string { return e.err.Error() }
func (e diskError) Unwrap() error { return e.err }

// Disk marks err as a failure of the Pod's own disk (OnDisk).
func Disk(err error) error { return diskError{err} }

// OnDisk reports whether err is a failure of the Pod's own disk (a file
// that cannot be made, written or read back, a full or read-only
// volume): another attempt, on another volume or after space is freed,
// may succeed, whatever the chain error it surfaced as.
func OnDisk(err error) bool {
	var d diskError
	var p *fs.PathError
	return errors.As(err, &d) || errors.As(err, &p) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EIO)
}
