package step

import (
	"errors"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Why staging ends as it does (report.Reason); the driver shows it in the
// RestoreJob's condition. The inspection and the rehearsal, which stage
// the same way, end for the same reasons.

// Terminal reasons: retrying the Job cannot change them.
const (
	// ReasonStaged: the staged snapshot is in place.
	ReasonStaged report.Reason = "Staged"
	// ReasonArtifactChanged: the object's size or sha256 is not the
	// recorded one (it was overwritten or truncated since the backup).
	ReasonArtifactChanged report.Reason = "ArtifactChanged"
	// ReasonArtifactCorrupt: etcd's integrity trailer or the database in
	// the object is invalid.
	ReasonArtifactCorrupt report.Reason = "ArtifactCorrupt"
	// ReasonArtifactMissing: no such object (or bucket).
	ReasonArtifactMissing report.Reason = "ArtifactMissing"
	// ReasonEndpointRefused: the endpoint breaks the endpoint policy;
	// nothing was sent to it.
	ReasonEndpointRefused report.Reason = "EndpointRefused"
	// ReasonInvalidArguments: the Job's arguments are unusable.
	ReasonInvalidArguments report.Reason = "InvalidArguments"
)

// Retryable reasons: another attempt may succeed.
const (
	// ReasonCredentialsRejected: S3 refused the keys, or they are
	// missing from the environment. Keys rotate, so this is retried.
	ReasonCredentialsRejected report.Reason = "CredentialsRejected"
	// ReasonVolumeFailed: writing the staging volume failed (full,
	// read-only, I/O error).
	ReasonVolumeFailed report.Reason = "VolumeFailed"
	// ReasonTransient: the store could not be reached or the read broke
	// off (network, 5xx, timeouts, cancellation).
	ReasonTransient report.Reason = "Transient"
)

// Classify maps an error of Stage or Main to its Reason and whether a
// retry may succeed; a nil error is ReasonStaged.
func Classify(err error) (report.Reason, bool) {
	var local localError
	switch {
	case err == nil:
		return ReasonStaged, false
	case errors.Is(err, ErrArguments), errors.Is(err, ErrPlan):
		return ReasonInvalidArguments, false
	case pointreplay.OnDisk(err):
		return ReasonVolumeFailed, true
	}
	if reason, refused := pointreplay.Refusal(err); refused {
		// The chain of changes to a point (pointreplay's reasons).
		return reason, false
	}
	switch {
	case errors.Is(err, s3object.ErrRefused):
		return ReasonEndpointRefused, false
	case errors.Is(err, s3object.ErrNotFound), errors.Is(err, s3object.ErrNoSuchBucket):
		return ReasonArtifactMissing, false
	case errors.Is(err, s3object.ErrSizeMismatch), errors.Is(err, s3object.ErrChecksumMismatch):
		return ReasonArtifactChanged, false
	case errors.Is(err, s3object.ErrCorrupt):
		return ReasonArtifactCorrupt, false
	case errors.Is(err, s3object.ErrAccessDenied), errors.Is(err, s3object.ErrCredentials):
		return ReasonCredentialsRejected, true
	case errors.As(err, &local):
		return ReasonVolumeFailed, true
	}
	return ReasonTransient, true
}

// ExitCode is the exit code for an error of Stage or Main.
func ExitCode(err error) int {
	if err == nil {
		return report.ExitSucceeded
	}
	if _, retryable := Classify(err); retryable {
		return report.ExitRetryable
	}
	return report.ExitRefused
}
