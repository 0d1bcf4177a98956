package step

import (
	"fmt"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// OutcomeRehearsed: the staged snapshot booted and read back as staged
// (exit report.ExitSucceeded). A run that did not is report.Retryable or
// report.Refused.
const OutcomeRehearsed report.Outcome = "Rehearsed"

// The rehearsal's own reasons; staging's pass through unchanged (a
// refused object is refused for the same reason a real restore would
// refuse it).
const (
	// ReasonRehearsed: booted and read back.
	ReasonRehearsed report.Reason = "Rehearsed"
	// ReasonSnapshotUnbootable: the staged snapshot could not be
	// restored or the etcd restored from it did not start. Terminal.
	ReasonSnapshotUnbootable report.Reason = "SnapshotUnbootable"
	// ReasonReadBackMismatch: the booted etcd answered something else
	// than the staged file holds (revision, compaction or key count).
	// Terminal.
	ReasonReadBackMismatch report.Reason = "ReadBackMismatch"
	// ReasonStagingUnreported: the staging step wrote no readable report
	// (a crash); retried.
	ReasonStagingUnreported report.Reason = "StagingUnreported"
)

// Report is the one line of JSON the step writes to its termination log:
// the envelope every step's report has, and what the booted etcd held.
type Report struct {
	report.Envelope
	// Revision is the revision the booted etcd answered at (the staged
	// one) and CompactedRevision its compaction mark.
	Revision          int64 `json:"revision,omitempty"`
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
	// Keys is how many keys the booted etcd holds.
	Keys int64 `json:"keys,omitempty"`
	// Keyspaces are the Kubernetes keyspaces the walk counted, largest
	// first, cut to fit report.MaxLine.
	Keyspaces []driverv1alpha1.KeyspaceManifest `json:"keyspaces,omitempty"`
	// Truncated is true when lists were cut (by the counter's bounds or to
	// fit the termination message).
	Truncated bool `json:"truncated,omitempty"`
}

// Failure is the report of a run that ended without a rehearsal.
func Failure(outcome report.Outcome, reason report.Reason, err error) Report {
	return Report{Envelope: report.Envelope{Outcome: outcome, Reason: reason, Message: report.Cut(err.Error())}}
}

// FromStaging is the report of a staging step that did not stage.
func FromStaging(sr stagingstep.Report) Report {
	outcome := report.Retryable
	if sr.Outcome == report.Refused {
		outcome = report.Refused
	}
	return Report{Envelope: report.Envelope{Outcome: outcome, Reason: sr.Reason, Message: report.Cut("staging: " + sr.Message)}}
}

// Step names the rehearsal step and its success.
func (r *Report) Step() report.Step { return rehearsalStep }

var rehearsalStep = report.Step{Name: "rehearsal", Outcomes: map[report.Outcome]int{OutcomeRehearsed: report.ExitSucceeded}}

// Shrink cuts the keyspaces as an inspection report's are
// (manifest.ShrinkKeyspaces: least useful first, a namespace name list
// only whole, since a partial list would read as namespaces missing) and
// says so in Truncated.
func (r *Report) Shrink() bool {
	if !manifest.ShrinkKeyspaces(&r.Keyspaces) {
		return false
	}
	r.Truncated = true
	return true
}

// Check refuses a success without a valid result, and keyspaces beyond
// the manifest's bounds (they come from the same Counter).
func (r *Report) Check() error {
	if r.Outcome == OutcomeRehearsed && (r.Revision <= 0 || r.CompactedRevision <= 0 || r.CompactedRevision > r.Revision || r.Keys < 0) {
		return fmt.Errorf("says %s but carries no valid result", r.Outcome)
	}
	return manifest.CheckKeyspaces(r.Keyspaces)
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int { return report.ExitCode(&r) }

// Line is the report as one line of JSON, newline included, at most
// report.MaxLine bytes (report.Line); the report's own lists are left as
// they are.
func (r Report) Line() string {
	r.Keyspaces = append([]driverv1alpha1.KeyspaceManifest(nil), r.Keyspaces...)
	return report.Line(&r)
}

// ParseReport reads a Pod's termination message strictly (report.Parse).
func ParseReport(s string) (Report, error) { return report.Read[Report](s) }
