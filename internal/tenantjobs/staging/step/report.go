package step

import (
	"fmt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// OutcomeStaged: the output is in place (exit report.ExitSucceeded). A
// run that did not stage is report.Retryable or report.Refused.
const OutcomeStaged report.Outcome = "Staged"

// Report is the one line of JSON etcd-stage writes to its termination log
// (and stdout), for the driver to read from the Pod's termination
// message: the envelope every step's report has, and the Result.
type Report struct {
	report.Envelope
	Result
}

// NewReport is the report of a run that returned res and err.
func NewReport(res Result, err error) Report {
	reason, retryable := Classify(err)
	r := Report{Envelope: report.Envelope{Outcome: OutcomeStaged, Reason: reason}, Result: res}
	switch {
	case err == nil:
		r.Message = fmt.Sprintf("staged at revision %d (snapshot at %d), compacted up to %d", res.Revision, res.SnapshotRevision, res.CompactedRevision)
		if p := res.Point; p != nil {
			r.Message = fmt.Sprintf("replayed %d revisions (%d changes) onto the base up to revision %d; %s", p.Revisions, p.Events, p.Revision, r.Message)
		}
	case retryable:
		r.Outcome, r.Message, r.Result = report.Retryable, err.Error(), Result{}
	default:
		r.Outcome, r.Message, r.Result = report.Refused, err.Error(), Result{}
	}
	r.Message = report.Cut(r.Message)
	return r
}

// Step names the staging step and its success.
func (r *Report) Step() report.Step { return stagingStep }

var stagingStep = report.Step{Name: "staging", Outcomes: map[report.Outcome]int{OutcomeStaged: report.ExitSucceeded}}

// Shrink has nothing to cut: the report carries no lists.
func (r *Report) Shrink() bool { return false }

// Check refuses a success without a result.
func (r *Report) Check() error {
	if r.Outcome == OutcomeStaged && (r.Revision <= 0 || r.CompactedRevision <= 0 || r.SHA256 == "" || r.Size <= 0) {
		return fmt.Errorf("says %s but carries no result", r.Outcome)
	}
	return nil
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int { return report.ExitCode(&r) }

// Line is the report as one line of JSON, newline included.
func (r Report) Line() string { return report.Line(&r) }

// ParseReport reads a Pod's termination message strictly (report.Parse).
func ParseReport(s string) (Report, error) { return report.Read[Report](s) }
