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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
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
const Shape = "{restoreTimeoutSeconds: int, safetySnapshot: bool, verify: Full|Size, rollback: bool, bumpRevision: bool, fenceControlPlanes: bool, dryRun: bool}"

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
	switch o.Verify {
	case "":
		o.Verify = VerifyFull
	case VerifyFull, VerifySize:
	default:
		return Options{}, fmt.Errorf("spec.options.verify is %q; want %q or %q", o.Verify, VerifyFull, VerifySize)
	}
	return o, nil
}

// DryRunOptions are the options of a dry run (as the plugin and the
// drills create them).
func DryRunOptions() *runtime.RawExtension {
	raw, _ := json.Marshal(Options{DryRun: true})
	return &runtime.RawExtension{Raw: raw}
}

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
