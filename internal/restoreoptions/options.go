// Package restoreoptions is what a RestoreJob asks of the Etcd driver: its
// spec.options, read by the one strict parser the restore, the rehearsal
// and the kubectl plugin share, and whether the job is a restore or a dry
// run, which is settled when it starts (kind.go).
package restoreoptions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
)

// Verification modes of spec.options.verify.
const (
	// VerifyFull downloads the snapshot and checks its sha256 against the
	// Backup and etcd's own integrity trailer.
	VerifyFull = "Full"
	// VerifySize only checks that the object exists with the recorded size.
	VerifySize = "Size"
)

// MaxRestoreTimeout caps spec.options.restoreTimeoutSeconds: a restore holds
// the application's HelmRelease suspended, so no option may hold it for
// longer than a day.
const MaxRestoreTimeout = 24 * time.Hour

// Options is the Etcd driver's reading of RestoreJob.spec.options.
// Unknown fields are refused: a misspelt option must not be ignored.
type Options struct {
	// RestoreTimeoutSeconds overrides the restore deadline; 0 means the
	// driver's default.
	RestoreTimeoutSeconds int64 `json:"restoreTimeoutSeconds,omitempty"`
	// SafetySnapshot asks for (true) or declines (false) a snapshot of the
	// live cluster before it is destroyed. Unset means: take one, and
	// refuse the restore when none can be taken.
	SafetySnapshot *bool `json:"safetySnapshot,omitempty"`
	// Verify is Full (default) or Size.
	Verify string `json:"verify,omitempty"`
	// Rollback, unset or true, re-creates the cluster from the safety
	// Backup when the restore fails after the purge.
	Rollback *bool `json:"rollback,omitempty"`
	// BumpRevision, unset or true, stages the snapshot with its revision
	// raised above the live cluster's and everything below compacted, and
	// boots etcd from the staged copy; false restores from S3 as the
	// operator does on its own (Kubernetes clients are not told to relist).
	BumpRevision *bool `json:"bumpRevision,omitempty"`
	// FenceControlPlanes, unset or true, makes the Kamaji control planes
	// storing in the etcd read-only for the restore and restarts their
	// kube-apiservers after it.
	FenceControlPlanes *bool `json:"fenceControlPlanes,omitempty"`
	// DryRun asks for a rehearsal instead of a restore: the rehearsal
	// controller (internal/tenantjobs/rehearsal) takes such a job and the
	// restore never acts on it. Read once, when the job starts (KindOf).
	DryRun bool `json:"dryRun,omitempty"`
	// PointInTime asks for the etcd as it was at a point after a base
	// Backup: an RFC 3339 time, or a revision (decimal digits). The
	// newest good Backup of the application at or before it is restored
	// and its chain of captured changes replayed up to it (Point,
	// ParsePoint; internal/pointintime, internal/changereplay).
	PointInTime string `json:"pointInTime,omitempty"`
}

// optionNames are the options' exact names, Options' JSON names.
var optionNames = func() []string {
	var out []string
	t := reflect.TypeFor[Options]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}()

// Shape is the options' shape, as error messages give it.
const Shape = "{restoreTimeoutSeconds: int, safetySnapshot: bool, verify: Full|Size, rollback: bool, bumpRevision: bool, fenceControlPlanes: bool, dryRun: bool, pointInTime: RFC 3339 time|revision}"

// Parse reads raw strictly: unknown fields, wrong types and values out of
// range are errors.
func Parse(raw *runtime.RawExtension) (Options, error) {
	var o Options
	if raw == nil || len(raw.Raw) == 0 {
		o.Verify = VerifyFull
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Options{}, fmt.Errorf("spec.options is not valid (want %s): %w", Shape, err)
	}
	// encoding/json matches names regardless of case: "DryRun" would be
	// read as dryRun. Only the exact names are options.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw.Raw, &fields); err != nil {
		return Options{}, fmt.Errorf("spec.options is not valid (want %s): %w", Shape, err)
	}
	for name := range fields {
		if !slices.Contains(optionNames, name) {
			return Options{}, fmt.Errorf("spec.options has no field %q (want %s)", name, Shape)
		}
	}
	switch {
	case o.RestoreTimeoutSeconds < 0:
		return Options{}, fmt.Errorf("spec.options.restoreTimeoutSeconds is %d; it must be positive", o.RestoreTimeoutSeconds)
	case o.RestoreTimeoutSeconds > int64(MaxRestoreTimeout/time.Second):
		return Options{}, fmt.Errorf("spec.options.restoreTimeoutSeconds is %d; at most %d (%s) is allowed",
			o.RestoreTimeoutSeconds, int64(MaxRestoreTimeout/time.Second), MaxRestoreTimeout)
	}
	if o.PointInTime != "" {
		if _, err := ParsePoint(o.PointInTime); err != nil {
			return Options{}, err
		}
		if !o.BumpsRevision() {
			return Options{}, fmt.Errorf("spec.options.pointInTime needs the staging step, where the changes are replayed; it cannot be combined with bumpRevision: false")
		}
	}
	switch o.Verify {
	case "":
		o.Verify = VerifyFull
	case VerifyFull, VerifySize:
	default:
		return Options{}, fmt.Errorf("spec.options.verify is %q; want %q or %q", o.Verify, VerifyFull, VerifySize)
	}
	return o, nil
}

// MaxPointLength bounds spec.options.pointInTime: an RFC 3339 time with
// nanoseconds and an offset is 35 characters.
const MaxPointLength = 40

// ParsePoint reads a point to restore to: a revision (decimal digits,
// above 0) or an RFC 3339 time (fractions of a second allowed, an offset
// or Z required).
func ParsePoint(s string) (changelog.Target, error) {
	if s == "" || len(s) > MaxPointLength {
		return changelog.Target{}, fmt.Errorf("spec.options.pointInTime must be an RFC 3339 time (2026-12-06T17:00:00Z) or a revision, of at most %d characters", MaxPointLength)
	}
	if strings.Trim(s, "0123456789") == "" {
		rev, err := strconv.ParseInt(s, 10, 64)
		if err != nil || rev <= 0 {
			return changelog.Target{}, fmt.Errorf("spec.options.pointInTime %q is not a revision above 0", s)
		}
		return changelog.Target{Revision: rev}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return changelog.Target{}, fmt.Errorf("spec.options.pointInTime %q is neither a revision nor an RFC 3339 time (2026-12-06T17:00:00Z): %w", s, err)
	}
	return changelog.Target{Time: t.UTC()}, nil
}

// Point is the point the options ask to restore to, if any (Parse has
// checked it).
func (o Options) Point() (changelog.Target, bool) {
	if o.PointInTime == "" {
		return changelog.Target{}, false
	}
	t, err := ParsePoint(o.PointInTime)
	return t, err == nil
}

// DryRunOptions are the options of a dry run (as the plugin and the
// drills create them).
func DryRunOptions() *runtime.RawExtension { return Options{DryRun: true}.Raw() }

// Timeout is how long the restore may take, from when it took the claim.
func (o Options) Timeout(def time.Duration) time.Duration {
	if o.RestoreTimeoutSeconds > 0 {
		return time.Duration(o.RestoreTimeoutSeconds) * time.Second
	}
	return def
}

// RollsBack reports whether a failed restore goes back to the safety Backup.
func (o Options) RollsBack() bool { return o.Rollback == nil || *o.Rollback }

// BumpsRevision reports whether the restore goes through the staging Job.
func (o Options) BumpsRevision() bool { return o.BumpRevision == nil || *o.BumpRevision }

// Fences reports whether the tenant control planes are fenced.
func (o Options) Fences() bool { return o.FenceControlPlanes == nil || *o.FenceControlPlanes }

// TakesSafetySnapshot reports whether a safety snapshot is asked for (or
// left to the default: taken).
func (o Options) TakesSafetySnapshot() bool { return o.SafetySnapshot == nil || *o.SafetySnapshot }
