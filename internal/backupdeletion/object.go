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
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// Keys of the credentials Secret, the same ones the etcd-operator's
// snapshot agent reads.
const (
	accessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	secretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// Values of the object label of the deletion metric.
const (
	objectDeleted  = "deleted"
	objectRetained = "retained"
	objectSkipped  = "skipped"
)

// outcome says what happened to a Backup's stored object.
type outcome struct {
	policy strategyv1alpha1.DeletionPolicy
	object string
}

// deleteObject removes the Backup's S3 object when its recorded policy is
// Delete and no admin asked to skip it. Failures that a retry can fix are
// plain errors (backoff); a Backup that does not say where its object is
// fails terminally until an admin sets SkipObjectDeletionAnnotation.
func (r *Reconciler) deleteObject(ctx context.Context, b *backupsv1alpha1.Backup) (outcome, error) {
	rec := artifact.RecordedOf(b)
	out := outcome{policy: rec.DeletionPolicy, object: objectRetained}
	if rec.DeletionPolicy != strategyv1alpha1.DeletionPolicyDelete {
		return out, nil
	}
	if b.Annotations[SkipObjectDeletionAnnotation] == "true" {
		out.object = objectSkipped
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "ObjectDeletionSkipped", "Cleanup",
			"kept the stored snapshot although the deletion policy is Delete, because %s is \"true\"", SkipObjectDeletionAnnotation)
		return out, nil
	}

	src, err := artifact.Resolve(b)
	if err == nil {
		err = validateEndpoint(src.Endpoint)
	}
	if err != nil {
		msg := fmt.Sprintf("cannot delete the stored snapshot: %v; fix the Backup, or set the annotation %s=\"true\" to delete the Backup and keep the object",
			err, SkipObjectDeletionAnnotation)
		return out, reconcile.TerminalError(r.blocked(ctx, b, backupsv1alpha1.BackupReasonUnresolvableArtifact, msg, err))
	}

	creds, err := r.credentials(ctx, b.Namespace, src.SecretName)
	if err != nil {
		msg := fmt.Sprintf("cannot delete s3://%s/%s: %v; retrying. Set the annotation %s=\"true\" to keep the object instead",
			src.Bucket, src.Key, err, SkipObjectDeletionAnnotation)
		return out, r.blocked(ctx, b, backupsv1alpha1.BackupReasonCredentialsUnavailable, msg, err)
	}

	deleter := r.Objects
	if deleter == nil {
		deleter = S3Deleter{}
	}
	if err := deleter.DeleteObject(ctx, src, creds); err != nil {
		msg := fmt.Sprintf("cannot delete s3://%s/%s at %s: %v; retrying. Set the annotation %s=\"true\" to keep the object instead",
			src.Bucket, src.Key, src.Endpoint, err, SkipObjectDeletionAnnotation)
		return out, r.blocked(ctx, b, backupsv1alpha1.BackupReasonObjectDeleteFailed, msg, err)
	}
	log.FromContext(ctx).Info("deleted stored snapshot", "bucket", src.Bucket, "key", src.Key, "endpoint", src.Endpoint)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "ObjectDeleted", "Cleanup",
		"deleted s3://%s/%s (deletion policy Delete)", src.Bucket, src.Key)
	out.object = objectDeleted
	return out, nil
}

// credentials reads the one Secret the Backup names, live.
func (r *Reconciler) credentials(ctx context.Context, namespace, name string) (Credentials, error) {
	var s corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return Credentials{}, fmt.Errorf("credentials Secret %s/%s not found", namespace, name)
		}
		return Credentials{}, fmt.Errorf("read credentials Secret %s/%s: %w", namespace, name, err)
	}
	c := Credentials{AccessKeyID: string(s.Data[accessKeyIDKey]), SecretAccessKey: string(s.Data[secretAccessKeyKey])}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		// Name the keys, never their values.
		return Credentials{}, fmt.Errorf("credentials Secret %s/%s lacks %s or %s", namespace, name, accessKeyIDKey, secretAccessKeyKey)
	}
	return c, nil
}

// blocked reports on the Backup (condition and Warning Event) why cleanup
// cannot finish, and returns cause wrapped for the caller.
func (r *Reconciler) blocked(ctx context.Context, b *backupsv1alpha1.Backup, reason, msg string, cause error) error {
	failuresTotal.WithLabelValues(reason).Inc()
	log.FromContext(ctx).Error(cause, "Backup cleanup blocked", "reason", reason)
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, reason, "Cleanup", "%s", msg)
	if err := r.setCleanupCondition(ctx, b, reason, msg); err != nil {
		return errors.Join(fmt.Errorf("%s: %w", reason, cause), err)
	}
	return fmt.Errorf("%s: %w", reason, cause)
}
