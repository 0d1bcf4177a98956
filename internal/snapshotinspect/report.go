package snapshotinspect

import (
	"encoding/json"
	"fmt"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is how an inspection run ended.
type Outcome string

const (
	// OutcomeInspected: the manifest is in the report (exit
	// staging.ExitStaged, 0).
	OutcomeInspected Outcome = "Inspected"
	// OutcomeRetryable: failed; another attempt may succeed
	// (staging.ExitRetryable).
	OutcomeRetryable Outcome = "Retryable"
	// OutcomeRefused: the object or the arguments are refused for good
	// (staging.ExitRefused).
	OutcomeRefused Outcome = "Refused"
)

// ReasonInspected is the reason of an inspection that produced its
// manifest; the others are staging's (the same checks fail the same way).
const ReasonInspected staging.Reason = "Inspected"

// MaxReportMessage bounds the report's message, as it is and as JSON
// writes it.
const MaxReportMessage = 1024

// MaxReportLine bounds the report's line: the kubelet keeps at most 4096
// bytes of a termination message; Line shrinks the manifest's lists until
// the report fits.
const MaxReportLine = 4000

// Report is the one line of JSON `etcd-stage inspect` writes to its
// termination log (and stdout), for the driver to read from the Pod's
// termination message.
type Report struct {
	Outcome Outcome        `json:"outcome"`
	Reason  staging.Reason `json:"reason"`
	// Message says what happened in words; cut to MaxReportMessage.
	Message string `json:"message,omitempty"`
	// Manifest is set exactly when Outcome is OutcomeInspected. Its
	// InspectedAt and Signature are left empty: the driver sets them.
	Manifest *backupsv1alpha1.BackupManifest `json:"manifest,omitempty"`
}

// NewReport is the report of a run that returned m and err.
func NewReport(m backupsv1alpha1.BackupManifest, err error) Report {
	if err == nil {
		r := Report{Outcome: OutcomeInspected, Reason: ReasonInspected, Manifest: &m}
		r.Message = fmt.Sprintf("inspected at revision %d (compacted up to %d): %d keys, %d Kubernetes keyspaces", m.Revision, m.CompactedRevision, m.Keys, len(m.Keyspaces))
		return r
	}
	reason, retryable := staging.Classify(err)
	r := Report{Outcome: OutcomeRefused, Reason: reason, Message: textlimit.Cut(err.Error(), MaxReportMessage)}
	if retryable {
		r.Outcome = OutcomeRetryable
	}
	return r
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int {
	switch r.Outcome {
	case OutcomeInspected:
		return staging.ExitStaged
	case OutcomeRefused:
		return staging.ExitRefused
	}
	return staging.ExitRetryable
}

// Line is the report as one line of JSON, newline included, at most
// MaxReportLine bytes: while it is longer, the manifest's lists lose
// entries (see manifest.ShrinkKeyspaces) and Truncated is set. The message is first cut
// until JSON writes it in MaxReportMessage bytes (a control character
// takes six).
func (r Report) Line() string {
	r.Message = textlimit.Cut(r.Message, MaxReportMessage)
	for encodedLen(r.Message) > MaxReportMessage {
		r.Message = textlimit.Cut(r.Message, len(r.Message)/2)
	}
	if r.Manifest != nil {
		m := *r.Manifest
		m.Keyspaces = append([]backupsv1alpha1.KeyspaceManifest(nil), m.Keyspaces...)
		r.Manifest = &m
	}
	for {
		b, err := json.Marshal(r)
		if err != nil {
			// Only strings, integers and a time: cannot happen.
			panic(err)
		}
		switch {
		case len(b)+1 <= MaxReportLine:
			return string(b) + "\n"
		case r.Manifest != nil && manifest.ShrinkKeyspaces(&r.Manifest.Keyspaces):
			r.Manifest.Truncated = true
		case r.Message != "":
			r.Message = textlimit.Cut(r.Message, len(r.Message)/2)
		default:
			// Nothing left to cut; a manifest within its bounds fits.
			return string(b) + "\n"
		}
	}
}

// encodedLen is how many bytes JSON writes for s, quotes left out.
func encodedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// MaxTerminationMessage is the most ParseReport reads: the kubelet keeps
// no more.
const MaxTerminationMessage = 4096

// ParseReport reads a Pod's termination message. The Pod runs in a
// tenant's namespace, so the message is untrusted data: it refuses
// anything that is not one complete report within the manifest's bounds,
// so a truncated, foreign or forged message is never taken for an outcome.
func ParseReport(s string) (Report, error) {
	if len(s) > MaxTerminationMessage {
		return Report{}, fmt.Errorf("termination message is %d bytes, more than %d", len(s), MaxTerminationMessage)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("termination message is not an inspection report: %w", err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("termination message holds more than one inspection report")
	}
	if r.Reason == "" || len(r.Reason) > backupsv1alpha1.ManifestMaxName {
		return Report{}, fmt.Errorf("inspection report has no usable reason")
	}
	if len(r.Message) > MaxReportMessage {
		return Report{}, fmt.Errorf("inspection report's message is %d bytes, more than %d", len(r.Message), MaxReportMessage)
	}
	switch r.Outcome {
	case OutcomeInspected:
		if r.Manifest == nil || r.Reason != ReasonInspected {
			return Report{}, fmt.Errorf("inspection report says %s but carries no manifest", r.Outcome)
		}
		if err := checkManifest(r.Manifest); err != nil {
			return Report{}, fmt.Errorf("inspection report's manifest: %w", err)
		}
	case OutcomeRetryable, OutcomeRefused:
		if r.Manifest != nil {
			return Report{}, fmt.Errorf("inspection report says %s but carries a manifest", r.Outcome)
		}
	default:
		return Report{}, fmt.Errorf("inspection report has unknown outcome %q", r.Outcome)
	}
	return r, nil
}

// checkManifest refuses values no inspection produces.
func checkManifest(m *backupsv1alpha1.BackupManifest) error {
	switch {
	case !m.InspectedAt.IsZero() || m.Signature != "":
		return fmt.Errorf("carries inspectedAt or a signature, which only the driver sets")
	case m.Revision <= 0 || m.CompactedRevision < 0 || m.CompactedRevision > m.Revision:
		return fmt.Errorf("revision %d, compacted revision %d", m.Revision, m.CompactedRevision)
	case m.Keys < 0 || m.DBSizeBytes <= 0:
		return fmt.Errorf("%d keys, %d bytes", m.Keys, m.DBSizeBytes)
	}
	if err := manifest.CheckKeyspaces(m.Keyspaces); err != nil {
		return err
	}
	var objects int64
	for _, k := range m.Keyspaces {
		objects += k.Objects
	}
	if objects > m.Keys {
		return fmt.Errorf("keyspaces hold %d objects, more than the %d keys", objects, m.Keys)
	}
	return nil
}
