package capture

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is how a capture ended.
type Outcome string

const (
	// OutcomeStopped: told to stop; everything received whole is
	// durable (ExitStopped).
	OutcomeStopped Outcome = "Stopped"
	// OutcomeGap: the chain cannot go on; the index records why and the
	// window ends at Newest (ExitGap). A new base Backup starts a new
	// chain.
	OutcomeGap Outcome = "Gap"
	// OutcomeRetryable: failed; a restart resumes from the index.
	OutcomeRetryable Outcome = "Retryable"
	// OutcomeRefused: the arguments or the chain's store are unusable
	// (ExitRefused).
	OutcomeRefused Outcome = "Refused"
)

// Reason says why a capture ended as it did.
type Reason string

// Reasons of OutcomeGap.
const (
	// ReasonCompacted: the etcd compacted revisions the capture had not
	// received (its watch's start, or a watch canceled for compaction
	// after it fell behind).
	ReasonCompacted Reason = "Compacted"
	// ReasonRevisionGap: the etcd sent a revision that does not follow
	// the last one received.
	ReasonRevisionGap Reason = "RevisionGap"
	// ReasonClusterChanged: the etcd is not the cluster the chain
	// follows (another cluster ID, or a revision behind the chain's:
	// restored or replaced).
	ReasonClusterChanged Reason = "ClusterChanged"
	// ReasonRevisionTooLarge: one revision is above the format's bound
	// (changelog.Limits).
	ReasonRevisionTooLarge Reason = "RevisionTooLarge"
	// ReasonChainEnded: the chain's index already records a gap.
	ReasonChainEnded Reason = "ChainEnded"
)

// Other reasons; the shared ones are staging's words.
const (
	ReasonStopped Reason = "Stopped"
	// ReasonChainMismatch: the chain's index follows another base
	// (revision or snapshot sha256) than the arguments name, or is not
	// an index. Refused.
	ReasonChainMismatch       Reason = "ChainMismatch"
	ReasonInvalidArguments           = Reason(stagingstep.ReasonInvalidArguments)
	ReasonEndpointRefused            = Reason(stagingstep.ReasonEndpointRefused)
	ReasonCredentialsRejected        = Reason(stagingstep.ReasonCredentialsRejected)
	ReasonTransient                  = Reason(stagingstep.ReasonTransient)
)

// Exit codes. ExitGap is sysexits' EX_NOINPUT ("the input does not
// exist"): the history the chain needs is gone; like ExitRefused, nothing
// but the step produces it.
const (
	ExitStopped   = 0
	ExitRetryable = report.ExitRetryable
	ExitRefused   = report.ExitRefused
	ExitGap       = 66
)

// MaxReportBytes bounds the report line (the kubelet keeps at most 4096
// bytes of a termination message); MaxMessage its message.
const (
	MaxReportBytes = 4000
	MaxMessage     = 2048
)

// Report is the one line of JSON the capture writes when it exits.
type Report struct {
	Outcome Outcome `json:"outcome"`
	Reason  Reason  `json:"reason"`
	Message string  `json:"message,omitempty"`
	// BaseRevision is the chain's base; Segments how many are durable;
	// Newest the newest durable revision and NewestTime when it was
	// received (none before the first segment).
	BaseRevision int64      `json:"baseRevision,omitempty"`
	Segments     int64      `json:"segments"`
	Newest       int64      `json:"newest,omitempty"`
	NewestTime   *time.Time `json:"newestTime,omitempty"`
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int {
	switch r.Outcome {
	case OutcomeStopped:
		return ExitStopped
	case OutcomeGap:
		return ExitGap
	case OutcomeRefused:
		return ExitRefused
	}
	return ExitRetryable
}

// Line is the report as one line of JSON, newline included.
func (r Report) Line() string {
	r.Message = textlimit.Cut(r.Message, MaxMessage)
	b, err := json.Marshal(r)
	if err != nil {
		// Strings, integers and a time: cannot happen.
		panic(err)
	}
	return string(b) + "\n"
}

// ParseReport reads a Pod's termination message, refusing anything that
// is not one complete report within its bounds.
func ParseReport(s string) (Report, error) {
	if len(s) > MaxReportBytes {
		return Report{}, fmt.Errorf("termination message is %d bytes, more than a capture report's %d", len(s), MaxReportBytes)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("termination message is not a capture report: %w", err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("termination message holds more than one capture report")
	}
	switch r.Outcome {
	case OutcomeStopped, OutcomeGap, OutcomeRetryable, OutcomeRefused:
	default:
		return Report{}, fmt.Errorf("capture report has unknown outcome %q", r.Outcome)
	}
	switch {
	case r.Reason == "":
		return Report{}, fmt.Errorf("capture report has no reason")
	case len(r.Message) > MaxMessage:
		return Report{}, fmt.Errorf("capture report's message is longer than %d bytes", MaxMessage)
	case r.Segments < 0 || r.Newest < 0 || (r.Newest > 0 && r.Newest < r.BaseRevision):
		return Report{}, fmt.Errorf("capture report's counts contradict each other")
	}
	return r, nil
}
