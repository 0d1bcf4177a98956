package restore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Before anything is destroyed the restore looks at the snapshot itself,
// with the credentials the operator will use: it exists, has the recorded
// size, and (verify: Full) its sha256 and etcd's integrity trailer are
// intact. The result is recorded in the ArtifactVerified condition, tied by
// a fingerprint to exactly what was checked, so an edit of the Backup after
// the check is checked again.

// fingerprint identifies what a verification covered.
func fingerprint(o *observation) string {
	s := o.source
	var checksum string
	if a := o.backup.Status.Artifact; a != nil {
		checksum = a.Checksum
	}
	return names.Hash(string(o.backup.UID), s.Bucket, s.Endpoint, s.Key, s.SecretName, checksum,
		strconv.FormatInt(o.backupSize(), 10), o.opts.Verify)
}

// decideVerification returns done when the current source was verified,
// otherwise the step to take (verify) or the refusal the check recorded.
func decideVerification(o *observation) (decision, bool) {
	fp := "[" + fingerprint(o) + "]"
	if c := meta.FindStatusCondition(o.job.Status.Conditions, backupsv1alpha1.RestoreConditionArtifactVerified); c != nil &&
		strings.HasSuffix(c.Message, fp) {
		if c.Status == metav1.ConditionTrue {
			return decision{}, true
		}
		return failure(o, backupsv1alpha1.RestoreReason(c.Reason), strings.TrimSpace(strings.TrimSuffix(c.Message, fp))), false
	}
	return decision{state: stateVerifyArtifact, reason: backupsv1alpha1.ReasonVerifyingArtifact, message: fmt.Sprintf(
		"checking s3://%s/%s with the credentials in Secret %s (verify: %s)", o.source.Bucket, o.source.Key, o.source.SecretName, o.opts.Verify)}, false
}

// quickCheckBytes is the largest object whose check writes no status
// before it: read from S3 and hashed in about a second, the check's own
// write follows at once.
const quickCheckBytes = 64 << 20

// quickCheck: the artifact check of this restore is expected to take about
// a second (verify: Size, or an object the Backup records as small).
func quickCheck(o *observation) bool {
	if o.opts.Verify == restoreoptions.VerifySize {
		return true
	}
	n := o.backupSize()
	return n > 0 && n <= quickCheckBytes
}

// pinned is the size and sha256 the staging Job holds the object to: those
// the Backup records, or, where it records none, those this job's own
// verification (verify: Full) measured.
func pinned(o *observation) (int64, string, bool) {
	size, sum := int64(0), ""
	if a := o.backup.Status.Artifact; a != nil {
		size, sum = a.SizeBytes, a.Checksum
	}
	if size > 0 && checksumRE.MatchString(sum) {
		return size, sum, true
	}
	c := meta.FindStatusCondition(o.job.Status.Conditions, backupsv1alpha1.RestoreConditionArtifactVerified)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.HasSuffix(c.Message, "["+fingerprint(o)+"]") {
		return 0, "", false
	}
	m := measuredRE.FindStringSubmatch(c.Message)
	if m == nil {
		return 0, "", false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 || (size > 0 && n != size) || (sum != "" && sum != "sha256:"+m[2]) {
		return 0, "", false
	}
	return n, "sha256:" + m[2], true
}

var (
	checksumRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// measuredRE reads what verifyArtifact's Full message says it measured.
	measuredRE = regexp.MustCompile(`: (\d+) bytes, sha256:([0-9a-f]{64}), etcd integrity trailer intact`)
)

// decidePinned refuses a restore through the staging step whose object has
// no known size and sha256 (verify: Size of a Backup that records none).
func decidePinned(o *observation) (decision, bool) {
	if !o.opts.BumpsRevision() {
		return decision{}, true
	}
	if _, _, ok := pinned(o); ok {
		return decision{}, true
	}
	return failure(o, backupsv1alpha1.ReasonUnrecognisedArtifact, "neither the Backup (status.artifact sizeBytes and checksum sha256:<hex>) "+
		"nor this restore's check (verify: Size measures no sha256) pins the snapshot's size and sha256, which the staging step needs to accept exactly "+
		"the verified bytes; use verify: Full, or spec.options.bumpRevision: false to restore the operator's way (Kubernetes clients of this etcd are then not told to relist)"), false
}

// verification is the result of looking at the snapshot.
type verification struct {
	ok      bool
	reason  backupsv1alpha1.RestoreReason
	message string
}

// minTransferRate sizes the check's timeout: at least this many bytes per
// second, plus a minute.
const minTransferRate = 1 << 20

// verifyArtifact reads the snapshot. It returns an error only for what a
// retry may fix (S3 or the API server unreachable).
func (r *Reconciler) verifyArtifact(ctx context.Context, o *observation) (verification, error) {
	src := o.source
	creds, held := r.creds.take(o.job.UID, src.SecretName, o.now)
	if !held {
		var err error
		creds, err = s3object.ReadCredentials(ctx, r.LiveReader, o.job.Namespace, src.SecretName)
		if errors.Is(err, s3object.ErrCredentials) {
			return verification{reason: backupsv1alpha1.ReasonCredentialsUnavailable, message: err.Error()}, nil
		}
		if err != nil {
			return verification{}, err
		}
	}
	loc := s3object.Location{Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Key, Region: src.Region,
		ForcePathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle}
	// The scheme was judged when the destination was rendered.
	store := s3object.Store{Policy: r.Policy, AllowHTTP: true}
	want := o.backupSize()
	ctx, cancel := context.WithTimeout(ctx, time.Minute+time.Duration(want/minTransferRate)*time.Second)
	defer cancel()

	size, err := store.Stat(ctx, loc, creds)
	if held && errors.Is(err, s3object.ErrAccessDenied) {
		// The key read before the claim may have been rotated since:
		// the check reads the Secret again before it refuses.
		return verification{}, fmt.Errorf("S3 refused the credentials read before the claim for %s; reading Secret %s again: %w", loc, src.SecretName, err)
	}
	if err != nil {
		return refusal(loc, err)
	}
	if want > 0 && size != want {
		return verification{reason: backupsv1alpha1.ReasonArtifactSizeMismatch, message: fmt.Sprintf(
			"%s holds %d bytes but the Backup records %d; the object was truncated or replaced", loc, size, want)}, nil
	}
	if msg := storageShortfall(o, clusterModel(o), size); msg != "" {
		return verification{reason: backupsv1alpha1.ReasonInsufficientStorage, message: msg}, nil
	}
	if o.opts.Verify == restoreoptions.VerifySize {
		return verification{ok: true, message: fmt.Sprintf("%s exists with %d bytes (verify: Size)", loc, size)}, nil
	}
	body, err := store.Open(ctx, loc, creds)
	if err != nil {
		return refusal(loc, err)
	}
	defer body.Close()
	var checksum string
	if a := o.backup.Status.Artifact; a != nil {
		checksum = a.Checksum
	}
	got, err := s3object.CheckSnapshot(body, want, checksum)
	if err != nil {
		return refusal(loc, err)
	}
	return verification{ok: true, message: fmt.Sprintf("%s: %d bytes, sha256:%s, etcd integrity trailer intact (verify: Full)", loc, got.Size, got.SHA256)}, nil
}

// refusal maps what S3 or the check said into a terminal refusal, or back
// into an error to retry.
func refusal(loc s3object.Location, err error) (verification, error) {
	v := verification{message: fmt.Sprintf("%s: %v", loc, err)}
	switch {
	case errors.Is(err, s3object.ErrNotFound), errors.Is(err, s3object.ErrNoSuchBucket):
		v.reason = backupsv1alpha1.ReasonArtifactMissing
		v.message = fmt.Sprintf("%s does not exist; the snapshot was deleted or never stored, so this Backup cannot be restored", loc)
	case errors.Is(err, s3object.ErrAccessDenied):
		v.reason = backupsv1alpha1.ReasonCredentialsUnavailable
		v.message = fmt.Sprintf("S3 refused the credentials for %s: %v", loc, err)
	case errors.Is(err, s3object.ErrRefused):
		v.reason = backupsv1alpha1.ReasonEndpointRefused
	case errors.Is(err, s3object.ErrSizeMismatch):
		v.reason = backupsv1alpha1.ReasonArtifactSizeMismatch
	case errors.Is(err, s3object.ErrChecksumMismatch):
		v.reason = backupsv1alpha1.ReasonArtifactChecksumMismatch
	case errors.Is(err, s3object.ErrCorrupt):
		v.reason = backupsv1alpha1.ReasonArtifactCorrupt
	default:
		return verification{}, fmt.Errorf("check %s: %w", loc, err)
	}
	return v, nil
}
