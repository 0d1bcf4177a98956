package step

import (
	"fmt"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// OutcomeInspected: the manifest is in the report (exit
// report.ExitSucceeded). A run that did not inspect is report.Retryable
// or report.Refused.
const OutcomeInspected report.Outcome = "Inspected"

// ReasonInspected is the reason of an inspection that produced its
// manifest; the others are staging's (the same checks fail the same way).
const ReasonInspected report.Reason = "Inspected"

// Report is the one line of JSON `etcd-stage inspect` writes to its
// termination log (and stdout), for the driver to read from the Pod's
// termination message: the envelope every step's report has, and the
// manifest.
type Report struct {
	report.Envelope
	// Manifest is set exactly when Outcome is OutcomeInspected. Its
	// InspectedAt and Signature are left empty: the driver sets them.
	Manifest *driverv1alpha1.BackupManifest `json:"manifest,omitempty"`
}

// NewReport is the report of a run that returned m and err.
func NewReport(m driverv1alpha1.BackupManifest, err error) Report {
	if err == nil {
		r := Report{Envelope: report.Envelope{Outcome: OutcomeInspected, Reason: ReasonInspected}, Manifest: &m}
		r.Message = fmt.Sprintf("inspected at revision %d (compacted up to %d): %d keys, %d Kubernetes keyspaces", m.Revision, m.CompactedRevision, m.Keys, len(m.Keyspaces))
		return r
	}
	reason, retryable := stagingstep.Classify(err)
	r := Report{Envelope: report.Envelope{Outcome: report.Refused, Reason: reason, Message: report.Cut(err.Error())}}
	if retryable {
		r.Outcome = report.Retryable
	}
	return r
}

// Step names the inspection step and its success.
func (r *Report) Step() report.Step { return inspectionStep }

var inspectionStep = report.Step{Name: "inspection", Outcomes: map[report.Outcome]int{OutcomeInspected: report.ExitSucceeded}}

// Shrink cuts the manifest's lists (manifest.ShrinkKeyspaces) and says
// so in Truncated.
func (r *Report) Shrink() bool {
	if r.Manifest == nil || !manifest.ShrinkKeyspaces(&r.Manifest.Keyspaces) {
		return false
	}
	r.Manifest.Truncated = true
	return true
}

// Check refuses a success without a manifest within its bounds, and a
// failure with one.
func (r *Report) Check() error {
	if r.Outcome != OutcomeInspected {
		if r.Manifest != nil {
			return fmt.Errorf("says %s but carries a manifest", r.Outcome)
		}
		return nil
	}
	if r.Manifest == nil || r.Reason != ReasonInspected {
		return fmt.Errorf("says %s but carries no manifest", r.Outcome)
	}
	if err := checkManifest(r.Manifest); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// ExitCode is the process exit code that goes with the report.
func (r Report) ExitCode() int { return report.ExitCode(&r) }

// Line is the report as one line of JSON, newline included, at most
// report.MaxLine bytes (report.Line): the manifest's lists lose entries
// until it fits, and Truncated says so; the report's own manifest is left
// as it is.
func (r Report) Line() string {
	if r.Manifest != nil {
		m := *r.Manifest
		m.Keyspaces = append([]driverv1alpha1.KeyspaceManifest(nil), m.Keyspaces...)
		r.Manifest = &m
	}
	return report.Line(&r)
}

// ParseReport reads a Pod's termination message strictly (report.Parse).
func ParseReport(s string) (Report, error) { return report.Read[Report](s) }

// checkManifest refuses values no inspection produces.
func checkManifest(m *driverv1alpha1.BackupManifest) error {
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
