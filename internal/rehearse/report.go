package rehearse

import (
	"encoding/json"
	"fmt"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is how a rehearsal ended.
type Outcome string

const (
	// OutcomeRehearsed: the staged snapshot booted and read back as
	// staged (exit ExitRehearsed).
	OutcomeRehearsed Outcome = "Rehearsed"
	// OutcomeRetryable: failed; another attempt may succeed.
	OutcomeRetryable Outcome = "Retryable"
	// OutcomeRefused: refused for good (ExitRefused).
	OutcomeRefused Outcome = "Refused"
)

// Reason says why a rehearsal ended as it did. Staging's reasons pass
// through unchanged (a refused object is refused for the same reason a
// real restore would refuse it); the rest are the rehearsal's own.
type Reason string

// The rehearsal's own reasons.
const (
	// ReasonRehearsed: booted and read back.
	ReasonRehearsed Reason = "Rehearsed"
	// ReasonSnapshotUnbootable: the staged snapshot could not be
	// restored or the etcd restored from it did not start. Terminal.
	ReasonSnapshotUnbootable Reason = "SnapshotUnbootable"
	// ReasonReadBackMismatch: the booted etcd answered something else
	// than the staged file holds (revision, compaction or key count).
	// Terminal.
	ReasonReadBackMismatch Reason = "ReadBackMismatch"
	// ReasonStagingUnreported: the staging step wrote no readable report
	// (a crash); retried.
	ReasonStagingUnreported Reason = "StagingUnreported"
)

// Exit codes: staging's.
const (
	ExitRehearsed = staging.ExitStaged
	ExitRetryable = staging.ExitRetryable
	ExitRefused   = staging.ExitRefused
)

// MaxReportBytes bounds the report line: the kubelet keeps at most 4096
// bytes of a termination message.
const MaxReportBytes = 4000

// MaxMessage bounds the report's message.
const MaxMessage = 1024

// Report is the one line of JSON the step writes to its termination log.
type Report struct {
	Outcome Outcome `json:"outcome"`
	Reason  Reason  `json:"reason"`
	// Message says what happened in words (at most MaxMessage).
	Message string `json:"message,omitempty"`
	// Revision is the revision the booted etcd answered at (the staged
	// one) and CompactedRevision its compaction mark.
	Revision          int64 `json:"revision,omitempty"`
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
	// Keys is how many keys the booted etcd holds.
	Keys int64 `json:"keys,omitempty"`
	// Keyspaces are the Kubernetes keyspaces the walk counted, largest
	// first, cut to fit MaxReportBytes.
	Keyspaces []backupsv1alpha1.KeyspaceManifest `json:"keyspaces,omitempty"`
	// Truncated is true when lists were cut (by the counter's bounds or to
	// fit the termination message).
	Truncated bool `json:"truncated,omitempty"`
}

// Failure is the report of a run that ended without a rehearsal.
func Failure(outcome Outcome, reason Reason, err error) Report {
	return Report{Outcome: outcome, Reason: reason, Message: textlimit.Cut(err.Error(), MaxMessage)}
}

// FromStaging is the report of a staging step that did not stage.
func FromStaging(sr staging.Report) Report {
	outcome := OutcomeRetryable
	if sr.Outcome == staging.OutcomeRefused {
		outcome = OutcomeRefused
	}
	return Report{Outcome: outcome, Reason: Reason(sr.Reason), Message: textlimit.Cut("staging: "+sr.Message, MaxMessage)}
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int {
	switch r.Outcome {
	case OutcomeRehearsed:
		return ExitRehearsed
	case OutcomeRefused:
		return ExitRefused
	}
	return ExitRetryable
}

// Line is the report as one line of JSON, newline included, at most
// MaxReportBytes: the keyspaces are cut as an inspection report's are
// (manifest.ShrinkKeyspaces: least useful first, a namespace name
// list only whole, since a partial list would read as namespaces missing)
// until it fits, and Truncated says so.
func (r Report) Line() string {
	r.Message = textlimit.Cut(r.Message, MaxMessage)
	r.Keyspaces = append([]backupsv1alpha1.KeyspaceManifest(nil), r.Keyspaces...)
	for {
		b, err := json.Marshal(r)
		if err != nil {
			// Only strings, integers and booleans: cannot happen.
			panic(err)
		}
		switch {
		case len(b)+1 <= MaxReportBytes:
			return string(b) + "\n"
		case manifest.ShrinkKeyspaces(&r.Keyspaces):
			r.Truncated = true
		case r.Message != "":
			r.Truncated = true
			r.Message = textlimit.Cut(r.Message, len(r.Message)/2)
		default:
			// Nothing left to cut; a report within its bounds fits.
			return string(b) + "\n"
		}
	}
}

// ParseReport reads a Pod's termination message. It refuses anything that
// is not one complete report within the bounds the step keeps, so a
// truncated, foreign or inflated message is never mistaken for an outcome.
func ParseReport(s string) (Report, error) {
	if len(s) > MaxReportBytes {
		return Report{}, fmt.Errorf("termination message is %d bytes, more than a rehearsal report's %d", len(s), MaxReportBytes)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("termination message is not a rehearsal report: %w", err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("termination message holds more than one rehearsal report")
	}
	switch r.Outcome {
	case OutcomeRehearsed:
		if r.Revision <= 0 || r.CompactedRevision <= 0 || r.CompactedRevision > r.Revision || r.Keys < 0 {
			return Report{}, fmt.Errorf("rehearsal report says %s but carries no valid result", r.Outcome)
		}
	case OutcomeRetryable, OutcomeRefused:
	default:
		return Report{}, fmt.Errorf("rehearsal report has unknown outcome %q", r.Outcome)
	}
	if r.Reason == "" {
		return Report{}, fmt.Errorf("rehearsal report has no reason")
	}
	if len(r.Message) > MaxMessage {
		return Report{}, fmt.Errorf("rehearsal report's message is longer than %d bytes", MaxMessage)
	}
	if err := manifest.CheckKeyspaces(r.Keyspaces); err != nil {
		return Report{}, fmt.Errorf("rehearsal report: %w", err)
	}
	return r, nil
}
