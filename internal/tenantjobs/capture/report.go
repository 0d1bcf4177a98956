package capture

import (
	"fmt"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// How a capture ends, beside every step's report.Retryable (a restart
// resumes from the index) and report.Refused (the arguments or the
// chain's store are unusable).
const (
	// OutcomeStopped: told to stop; everything received whole is
	// durable (ExitStopped).
	OutcomeStopped report.Outcome = "Stopped"
	// OutcomeGap: the chain cannot go on; the index records why and the
	// window ends at Newest (ExitGap). A new base Backup starts a new
	// chain.
	OutcomeGap report.Outcome = "Gap"
)

// Reasons of OutcomeGap.
const (
	// ReasonCompacted: the etcd compacted revisions the capture had not
	// received (its watch's start, or a watch canceled for compaction
	// after it fell behind).
	ReasonCompacted report.Reason = "Compacted"
	// ReasonRevisionGap: the etcd sent a revision that does not follow
	// the last one received.
	ReasonRevisionGap report.Reason = "RevisionGap"
	// ReasonClusterChanged: the etcd is not the cluster the chain
	// follows (another cluster ID, or a revision behind the chain's:
	// restored or replaced).
	ReasonClusterChanged report.Reason = "ClusterChanged"
	// ReasonRevisionTooLarge: one revision is above the format's bound
	// (changelog.Limits).
	ReasonRevisionTooLarge report.Reason = "RevisionTooLarge"
	// ReasonChainEnded: the chain's index already records a gap.
	ReasonChainEnded report.Reason = "ChainEnded"
)

// Other reasons; the shared ones are staging's words.
const (
	ReasonStopped report.Reason = "Stopped"
	// ReasonChainMismatch: the chain's index follows another base
	// (revision or snapshot sha256) than the arguments name, or is not
	// an index. Refused.
	ReasonChainMismatch       report.Reason = "ChainMismatch"
	ReasonInvalidArguments                  = stagingstep.ReasonInvalidArguments
	ReasonEndpointRefused                   = stagingstep.ReasonEndpointRefused
	ReasonCredentialsRejected               = stagingstep.ReasonCredentialsRejected
	ReasonTransient                         = stagingstep.ReasonTransient
)

// Exit codes of the capture's own outcomes. ExitGap is sysexits'
// EX_NOINPUT ("the input does not exist"): the history the chain needs is
// gone; like report.ExitRefused, nothing but the step produces it.
const (
	ExitStopped = report.ExitSucceeded
	ExitGap     = 66
)

// Report is the one line of JSON the capture writes when it exits: the
// envelope every step's report has (internal/tenantjobs/report), and the
// chain's state.
type Report struct {
	report.Envelope
	// BaseRevision is the chain's base; Segments how many are durable;
	// Newest the newest durable revision and NewestTime when it was
	// received (none before the first segment).
	BaseRevision int64      `json:"baseRevision,omitempty"`
	Segments     int64      `json:"segments"`
	Newest       int64      `json:"newest,omitempty"`
	NewestTime   *time.Time `json:"newestTime,omitempty"`
}

// Step names the capture step and its own outcomes.
func (r *Report) Step() report.Step { return captureStep }

var captureStep = report.Step{Name: "capture", Outcomes: map[report.Outcome]int{OutcomeStopped: ExitStopped, OutcomeGap: ExitGap}}

// Shrink has nothing to cut: the report carries no lists.
func (r *Report) Shrink() bool { return false }

// Check refuses counts that contradict each other.
func (r *Report) Check() error {
	if r.Segments < 0 || r.Newest < 0 || (r.Newest > 0 && r.Newest < r.BaseRevision) {
		return fmt.Errorf("counts contradict each other")
	}
	return nil
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int { return report.ExitCode(&r) }

// Line is the report as one line of JSON, newline included, at most
// report.MaxLine bytes (report.Line).
func (r Report) Line() string { return report.Line(&r) }

// ParseReport reads a Pod's termination message strictly (report.Parse).
func ParseReport(s string) (Report, error) { return report.Read[Report](s) }
