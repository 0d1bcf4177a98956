package rehearse

import (
	"encoding/json"
	"fmt"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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
// MaxReportBytes: lists are cut (largest list first, its smallest entries
// first) until it fits, and Truncated says so. A namespace name list is
// dropped whole rather than cut, since a partial list would read as
// namespaces missing.
func (r Report) Line() string {
	r.Message = textlimit.Cut(r.Message, MaxMessage)
	r.Keyspaces = cloneKeyspaces(r.Keyspaces)
	for {
		b, err := json.Marshal(r)
		if err != nil {
			// Only strings, integers and booleans: cannot happen.
			panic(err)
		}
		if len(b)+1 <= MaxReportBytes {
			return string(b) + "\n"
		}
		r.Truncated = true
		if !shrink(&r) {
			// Nothing left to cut but the message.
			r.Message = textlimit.Cut(r.Message, len(r.Message)/2)
		}
	}
}

// shrink cuts one entry from the longest list, or drops the last
// keyspace; false when there is nothing left to cut.
func shrink(r *Report) bool {
	var longest *[]backupsv1alpha1.ObjectCount
	names := -1
	for i := range r.Keyspaces {
		k := &r.Keyspaces[i]
		if len(k.NamespaceNames) > 0 && (names < 0 || len(k.NamespaceNames) > len(r.Keyspaces[names].NamespaceNames)) {
			names = i
		}
		for _, l := range []*[]backupsv1alpha1.ObjectCount{&k.Resources, &k.TopNamespaces} {
			if len(*l) > 0 && (longest == nil || len(*l) > len(*longest)) {
				longest = l
			}
		}
	}
	switch {
	case names >= 0 && (longest == nil || len(r.Keyspaces[names].NamespaceNames) >= len(*longest)):
		r.Keyspaces[names].NamespaceNames = nil
	case longest != nil:
		*longest = (*longest)[:len(*longest)-1]
	case len(r.Keyspaces) > 0:
		r.Keyspaces = r.Keyspaces[:len(r.Keyspaces)-1]
	default:
		return false
	}
	return true
}

func cloneKeyspaces(in []backupsv1alpha1.KeyspaceManifest) []backupsv1alpha1.KeyspaceManifest {
	out := make([]backupsv1alpha1.KeyspaceManifest, len(in))
	for i, k := range in {
		k.Resources = append([]backupsv1alpha1.ObjectCount(nil), k.Resources...)
		k.TopNamespaces = append([]backupsv1alpha1.ObjectCount(nil), k.TopNamespaces...)
		k.NamespaceNames = append([]string(nil), k.NamespaceNames...)
		out[i] = k
	}
	if len(out) == 0 {
		return nil
	}
	return out
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
	if err := checkKeyspaces(r.Keyspaces); err != nil {
		return Report{}, err
	}
	return r, nil
}

// checkKeyspaces holds the lists to the API's bounds.
func checkKeyspaces(ks []backupsv1alpha1.KeyspaceManifest) error {
	if len(ks) > backupsv1alpha1.ManifestMaxKeyspaces {
		return fmt.Errorf("rehearsal report lists %d keyspaces, at most %d allowed", len(ks), backupsv1alpha1.ManifestMaxKeyspaces)
	}
	for _, k := range ks {
		if len(k.Prefix) > 64 || k.Objects < 0 || k.Namespaces < 0 ||
			len(k.Resources) > backupsv1alpha1.ManifestMaxResources ||
			len(k.TopNamespaces) > backupsv1alpha1.ManifestMaxNamespaces ||
			len(k.NamespaceNames) > 2*backupsv1alpha1.ManifestMaxNamespaces {
			return fmt.Errorf("rehearsal report's keyspace %q is beyond the manifest's bounds", textlimit.Value(k.Prefix))
		}
		for _, c := range append(append([]backupsv1alpha1.ObjectCount(nil), k.Resources...), k.TopNamespaces...) {
			if len(c.Name) > backupsv1alpha1.ManifestMaxName || c.Count < 0 {
				return fmt.Errorf("rehearsal report's keyspace %q holds an invalid count", textlimit.Value(k.Prefix))
			}
		}
		for _, n := range k.NamespaceNames {
			if len(n) > backupsv1alpha1.ManifestMaxName {
				return fmt.Errorf("rehearsal report's keyspace %q names an invalid namespace", textlimit.Value(k.Prefix))
			}
		}
	}
	return nil
}
