package backupdeletion

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Values of the object label of the deletion metric.
const (
	objectDeleted  = "deleted"
	objectRetained = "retained"
	objectSkipped  = "skipped"
	// objectKeptUnverified: the policy said Delete, but nothing proves the
	// Backup's author owns the object.
	objectKeptUnverified = "kept-unverified"
	// objectKeptCredentialsGone: the credentials Secret does not exist.
	objectKeptCredentialsGone = "kept-credentials-gone"
	// objectKeptNamespaceTerminating: the namespace is being deleted and
	// the object could not be deleted at once.
	objectKeptNamespaceTerminating = "kept-namespace-terminating"
)

// outcome says what happened to a Backup's stored object.
type outcome struct {
	policy driverv1alpha1.DeletionPolicy
	object string
}

// ObjectDeleter deletes stored objects (s3object.Store): one snapshot, or
// a batch of the objects under a chain's folder. Deleting what does not
// exist succeeds.
type ObjectDeleter interface {
	Delete(ctx context.Context, loc s3object.Location, creds s3object.Credentials) error
	DeleteUnder(ctx context.Context, folder s3object.Location, creds s3object.Credentials, max int) (int, error)
}

// deleteObject removes the Backup's S3 object, and before it the chain of
// captured changes that follows the Backup, when the driver verifies it
// recorded the Backup, its recorded policy is Delete, and no admin asked
// to skip it (Retain and the annotation keep both). An unverified Backup's
// object is kept whatever it claims.
// Failures that a retry can fix are plain errors (backoff); an endpoint the
// policy refuses stops the cleanup until an admin sets
// SkipObjectDeletionAnnotation.
func (r *Reconciler) deleteObject(ctx context.Context, b *backupsv1alpha1.Backup, v provenance.Verdict) (outcome, error) {
	rec := artifact.RecordedOf(b)
	out := outcome{policy: rec.DeletionPolicy, object: objectRetained}
	if rec.DeletionPolicy != driverv1alpha1.DeletionPolicyDelete {
		return out, nil
	}
	if !v.Verified {
		out.object = objectKeptUnverified
		msg := fmt.Sprintf("kept the S3 object this Backup names although it asks for deletion: the driver cannot verify it recorded this Backup (%s: %s)",
			v.Reason, v.Message)
		log.FromContext(ctx).Info("kept the object of an unverified Backup", "reason", v.Reason)
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, backupsv1alpha1.BackupReasonObjectKeptUnverified, "Cleanup", "%s", msg)
		return out, nil
	}
	if b.Annotations[SkipObjectDeletionAnnotation] == "true" {
		out.object = objectSkipped
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "ObjectDeletionSkipped", "Cleanup",
			"kept the stored snapshot (and the chain of captured changes that follows it, if any) although the deletion policy is Delete, because %s is \"true\"", SkipObjectDeletionAnnotation)
		return out, nil
	}

	f := v.Facts
	loc := s3object.Location{Endpoint: f.Endpoint, Bucket: f.Bucket, Key: f.Key, Region: f.Region, ForcePathStyle: f.ForcePathStyle}
	folder, hasChain, err := r.chainFolder(ctx, b, loc)
	if err != nil {
		return out, err
	}
	keys := []string{loc.Key}
	if hasChain {
		keys = append(keys, folder.Key)
	}
	creds, err := r.credentials(ctx, b.Namespace, f, keys...)
	if errors.Is(err, s3object.ErrSecretGone) {
		// Waiting would hold the Backup (and a namespace being deleted)
		// for a Secret that may never come back.
		return r.kept(ctx, b, out, objectKeptCredentialsGone, backupsv1alpha1.BackupReasonObjectKeptCredentialsGone,
			fmt.Sprintf("kept %s although the deletion policy is Delete: %v", loc, err)), nil
	}
	if err != nil {
		if r.namespaceTerminating(ctx, b.Namespace) {
			return r.kept(ctx, b, out, objectKeptNamespaceTerminating, backupsv1alpha1.BackupReasonObjectKeptNamespaceTerminating,
				fmt.Sprintf("kept %s although the deletion policy is Delete: the namespace is being deleted and %v", loc, err)), nil
		}
		msg := fmt.Sprintf("cannot delete %s: %v; retrying. Set the annotation %s=\"true\" to keep the object instead",
			loc, err, SkipObjectDeletionAnnotation)
		return out, r.blocked(ctx, b, backupsv1alpha1.BackupReasonCredentialsUnavailable, msg, err)
	}
	deleter := r.Objects
	if deleter == nil {
		// The scheme was judged when the destination was rendered; every
		// address dialled is checked against the policy.
		deleter = s3object.Store{Policy: r.Policy, AllowHTTP: true}
	}
	// The chain first: it is worth nothing without its base, and a
	// cleanup that stops between the two finds it empty next time.
	if hasChain {
		n, err := deleteChain(ctx, deleter, folder, creds)
		if err != nil {
			return r.deleteFailed(ctx, b, out, folder, backupsv1alpha1.BackupReasonChainDeleteFailed, err)
		}
		if n > 0 {
			log.FromContext(ctx).Info("deleted the chain of captured changes", "bucket", f.Bucket, "prefix", folder.Key, "objects", n)
			r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "ChainDeleted", "Cleanup",
				"deleted the %d objects of the chain of captured changes under %s (deletion policy Delete)", n, folder)
		}
		// In a namespace being deleted the capture goes too, and the
		// namespace is not held for it.
		left, err := r.settleLeft(ctx, b)
		if err != nil {
			return out, err
		}
		if left > 0 && !r.namespaceTerminating(ctx, b.Namespace) {
			return out, &settling{after: left}
		}
	}
	if err := deleter.Delete(ctx, loc, creds); err != nil {
		return r.deleteFailed(ctx, b, out, loc, backupsv1alpha1.BackupReasonObjectDeleteFailed, err)
	}
	log.FromContext(ctx).Info("deleted stored snapshot", "bucket", f.Bucket, "key", f.Key, "endpoint", f.Endpoint)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "ObjectDeleted", "Cleanup", "deleted %s (deletion policy Delete)", loc)
	out.object = objectDeleted
	return out, nil
}

// deleteFailed answers a failed S3 delete of loc: in a namespace being
// deleted the Backup is released keeping what is left; otherwise the
// failure is reported and retried with backoff, except for an endpoint the
// policy refuses, which stops the cleanup until an admin sets
// SkipObjectDeletionAnnotation.
func (r *Reconciler) deleteFailed(ctx context.Context, b *backupsv1alpha1.Backup, out outcome, loc s3object.Location, reason string, err error) (outcome, error) {
	if r.namespaceTerminating(ctx, b.Namespace) {
		return r.kept(ctx, b, out, objectKeptNamespaceTerminating, backupsv1alpha1.BackupReasonObjectKeptNamespaceTerminating,
			fmt.Sprintf("kept %s although the deletion policy is Delete: the namespace is being deleted and the delete failed: %v", loc, err)), nil
	}
	msg := fmt.Sprintf("cannot delete %s at %s: %v; retrying. Set the annotation %s=\"true\" to keep the object instead",
		loc, loc.Endpoint, err, SkipObjectDeletionAnnotation)
	err = r.blocked(ctx, b, reason, msg, err)
	if errors.Is(err, s3object.ErrRefused) {
		return out, reconcile.TerminalError(err)
	}
	return out, err
}

// kept reports (Warning Event and the deletion metric's object label) that
// the object was kept so the Backup could be released, and returns out
// with that label.
func (r *Reconciler) kept(ctx context.Context, b *backupsv1alpha1.Backup, out outcome, object, reason, msg string) outcome {
	log.FromContext(ctx).Info("released a Backup keeping its object", "reason", reason)
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, reason, "Cleanup", "%s", msg)
	out.object = object
	return out
}

// namespaceTerminating reports whether ns is being deleted (read live; a
// failed read counts as not terminating, so the normal retry applies).
func (r *Reconciler) namespaceTerminating(ctx context.Context, ns string) bool {
	var n corev1.Namespace
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return true
		}
		log.FromContext(ctx).Error(err, "read the Backup's namespace", "namespace", ns)
		return false
	}
	return n.DeletionTimestamp != nil || n.Status.Phase == corev1.NamespaceTerminating
}

// blocked reports on the Backup (condition and Warning Event) why cleanup
// cannot finish, and returns cause wrapped for the caller.
func (r *Reconciler) blocked(ctx context.Context, b *backupsv1alpha1.Backup, reason, msg string, cause error) error {
	failuresTotal.WithLabelValues(reason).Inc()
	log.FromContext(ctx).Error(cause, "Backup cleanup blocked", "reason", reason)
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, reason, "Cleanup", "%s", msg)
	if err := r.setCondition(ctx, b, backupsv1alpha1.BackupConditionCleanup, false, reason, msg); err != nil {
		return errors.Join(fmt.Errorf("%s: %w", reason, cause), err)
	}
	return fmt.Errorf("%s: %w", reason, cause)
}
