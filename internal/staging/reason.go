package staging

import (
	"errors"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Reason says why staging ended as it did; the driver shows it in the
// RestoreJob's condition.
type Reason string

// Terminal reasons: retrying the Job cannot change them.
const (
	// ReasonStaged: the staged snapshot is in place.
	ReasonStaged Reason = "Staged"
	// ReasonArtifactChanged: the object's size or sha256 is not the
	// recorded one (it was overwritten or truncated since the backup).
	ReasonArtifactChanged Reason = "ArtifactChanged"
	// ReasonArtifactCorrupt: etcd's integrity trailer or the database in
	// the object is invalid.
	ReasonArtifactCorrupt Reason = "ArtifactCorrupt"
	// ReasonArtifactMissing: no such object (or bucket).
	ReasonArtifactMissing Reason = "ArtifactMissing"
	// ReasonEndpointRefused: the endpoint breaks the endpoint policy;
	// nothing was sent to it.
	ReasonEndpointRefused Reason = "EndpointRefused"
	// ReasonInvalidArguments: the Job's arguments are unusable.
	ReasonInvalidArguments Reason = "InvalidArguments"
)

// Retryable reasons: another attempt may succeed.
const (
	// ReasonCredentialsRejected: S3 refused the keys, or they are
	// missing from the environment. Keys rotate, so this is retried.
	ReasonCredentialsRejected Reason = "CredentialsRejected"
	// ReasonVolumeFailed: writing the staging volume failed (full,
	// read-only, I/O error).
	ReasonVolumeFailed Reason = "VolumeFailed"
	// ReasonTransient: the store could not be reached or the read broke
	// off (network, 5xx, timeouts, cancellation).
	ReasonTransient Reason = "Transient"
)

// Exit codes of etcd-stage. The driver's Job podFailurePolicy fails the
// Job at once on ExitRefused and lets its backoff retry everything else.
// ExitRefused is a code nothing but a refusal produces: a Go panic or
// runtime fatal error exits 2, a kill 128+signal (137 for an OOM kill),
// a command that cannot start 126–128; 65 is sysexits' EX_DATAERR ("the
// input data was incorrect"), which neither Go, the container runtime
// nor the kubelet uses.
const (
	ExitStaged    = 0
	ExitRetryable = 1
	ExitRefused   = 65
)

// Classify maps an error of Stage or Main to its Reason and whether a
// retry may succeed; a nil error is ReasonStaged.
func Classify(err error) (Reason, bool) {
	var local localError
	switch {
	case err == nil:
		return ReasonStaged, false
	case errors.Is(err, ErrArguments), errors.Is(err, ErrPlan):
		return ReasonInvalidArguments, false
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
		return ExitStaged
	}
	if _, retryable := Classify(err); retryable {
		return ExitRetryable
	}
	return ExitRefused
}
