package restore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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

// jobOptions is the Etcd driver's reading of RestoreJob.spec.options.
// Unknown fields are refused: a misspelt option must not be ignored.
type jobOptions struct {
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
	// controller (internal/rehearsal) takes such a job and this package
	// never acts on it.
	DryRun bool `json:"dryRun,omitempty"`
}

const optionsShape = "{restoreTimeoutSeconds: int, safetySnapshot: bool, verify: Full|Size, rollback: bool, bumpRevision: bool, fenceControlPlanes: bool, dryRun: bool}"

func parseOptions(raw *runtime.RawExtension) (jobOptions, error) {
	var o jobOptions
	if raw == nil || len(raw.Raw) == 0 {
		o.Verify = VerifyFull
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return jobOptions{}, fmt.Errorf("spec.options is not valid (want %s): %w", optionsShape, err)
	}
	switch {
	case o.RestoreTimeoutSeconds < 0:
		return jobOptions{}, fmt.Errorf("spec.options.restoreTimeoutSeconds is %d; it must be positive", o.RestoreTimeoutSeconds)
	case o.RestoreTimeoutSeconds > int64(MaxRestoreTimeout/time.Second):
		return jobOptions{}, fmt.Errorf("spec.options.restoreTimeoutSeconds is %d; at most %d (%s) is allowed",
			o.RestoreTimeoutSeconds, int64(MaxRestoreTimeout/time.Second), MaxRestoreTimeout)
	}
	switch o.Verify {
	case "":
		o.Verify = VerifyFull
	case VerifyFull, VerifySize:
	default:
		return jobOptions{}, fmt.Errorf("spec.options.verify is %q; want %q or %q", o.Verify, VerifyFull, VerifySize)
	}
	return o, nil
}

// timeout is how long the restore may take, from when it took the claim.
func (o jobOptions) timeout(def time.Duration) time.Duration {
	if o.RestoreTimeoutSeconds > 0 {
		return time.Duration(o.RestoreTimeoutSeconds) * time.Second
	}
	return def
}

// rollback reports whether a failed restore goes back to the safety Backup.
func (o jobOptions) rollback() bool { return o.Rollback == nil || *o.Rollback }

// bumpRevision reports whether the restore goes through the staging Job.
func (o jobOptions) bumpRevision() bool { return o.BumpRevision == nil || *o.BumpRevision }

// fence reports whether the tenant control planes are fenced.
func (o jobOptions) fence() bool { return o.FenceControlPlanes == nil || *o.FenceControlPlanes }

// IsDryRun reports whether rj's options ask for a rehearsal (dryRun:
// true). Options that do not parse are no dry run: the restore refuses
// them with MalformedOptions, as before.
func IsDryRun(rj *backupsv1alpha1.RestoreJob) bool {
	o, err := parseOptions(rj.Spec.Options)
	return err == nil && o.DryRun
}
