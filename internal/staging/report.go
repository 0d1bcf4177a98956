package staging

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is how a staging run ended.
type Outcome string

const (
	// OutcomeStaged: the output is in place (exit ExitStaged).
	OutcomeStaged Outcome = "Staged"
	// OutcomeRetryable: failed; another attempt may succeed (ExitRetryable).
	OutcomeRetryable Outcome = "Retryable"
	// OutcomeRefused: refused for good (ExitRefused).
	OutcomeRefused Outcome = "Refused"
)

// MaxReportMessage bounds the report's message: the kubelet keeps at most
// 4096 bytes of a termination message, and the JSON around the message
// must fit as well.
const MaxReportMessage = 2048

// Report is the one line of JSON etcd-stage writes to its termination log
// (and stdout), for the driver to read from the Pod's termination message.
type Report struct {
	Outcome Outcome `json:"outcome"`
	Reason  Reason  `json:"reason"`
	// Message says what happened in words; cut to MaxReportMessage.
	Message string `json:"message,omitempty"`
	Result
}

// NewReport is the report of a run that returned res and err.
func NewReport(res Result, err error) Report {
	reason, retryable := Classify(err)
	r := Report{Outcome: OutcomeStaged, Reason: reason, Result: res}
	switch {
	case err == nil:
		r.Message = fmt.Sprintf("staged at revision %d (snapshot at %d), compacted up to %d", res.Revision, res.SnapshotRevision, res.CompactedRevision)
	case retryable:
		r.Outcome, r.Message, r.Result = OutcomeRetryable, err.Error(), Result{}
	default:
		r.Outcome, r.Message, r.Result = OutcomeRefused, err.Error(), Result{}
	}
	r.Message = textlimit.Cut(r.Message, MaxReportMessage)
	return r
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int {
	switch r.Outcome {
	case OutcomeStaged:
		return ExitStaged
	case OutcomeRefused:
		return ExitRefused
	}
	return ExitRetryable
}

// Line is the report as one line of JSON, newline included.
func (r Report) Line() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Only strings and integers: cannot happen.
		panic(err)
	}
	return string(b) + "\n"
}

// ParseReport reads a Pod's termination message. It refuses anything that
// is not one complete report, so a truncated or foreign message is never
// mistaken for an outcome.
func ParseReport(s string) (Report, error) {
	var r Report
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("termination message is not a staging report: %w", err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("termination message holds more than one staging report")
	}
	switch r.Outcome {
	case OutcomeStaged:
		if r.Revision <= 0 || r.CompactedRevision <= 0 || r.SHA256 == "" || r.Size <= 0 {
			return Report{}, fmt.Errorf("staging report says %s but carries no result", r.Outcome)
		}
	case OutcomeRetryable, OutcomeRefused:
	default:
		return Report{}, fmt.Errorf("staging report has unknown outcome %q", r.Outcome)
	}
	if r.Reason == "" {
		return Report{}, fmt.Errorf("staging report has no reason")
	}
	return r, nil
}
