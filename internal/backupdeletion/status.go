package backupdeletion

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// showVerdict keeps the Verified condition in line with the signature, for
// people and tools (the driver never reads it back).
func (r *Reconciler) showVerdict(ctx context.Context, b *backupsv1alpha1.Backup, v provenance.Verdict) error {
	if v.Verified {
		return r.setCondition(ctx, b, backupsv1alpha1.BackupConditionVerified, true, backupsv1alpha1.BackupReasonProvenanceVerified,
			artifact.VerifiedMessage)
	}
	return r.setCondition(ctx, b, backupsv1alpha1.BackupConditionVerified, false, backupsv1alpha1.BackupReasonUnverified,
		v.Reason+": "+v.Message+"; deleting it keeps its S3 object, a restore from it must match this namespace's strategy, and retention ignores it")
}

// setCondition records a condition on the Backup. Backup has no status
// subresource, so this is a patch of the object, and every such patch
// moves metadata.generation: the condition carries no observedGeneration,
// or each write would call for the next. Nothing is written when the
// condition is unchanged.
func (r *Reconciler) setCondition(ctx context.Context, b *backupsv1alpha1.Backup, typ string, ok bool, reason, msg string) error {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	before := b.DeepCopy()
	changed := meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type:    typ,
		Status:  status,
		Reason:  reason,
		Message: textlimit.Message(msg),
	})
	if !changed {
		return nil
	}
	// With the optimistic lock: the patch replaces the whole condition
	// list, and a stale copy would drop conditions the inspection wrote.
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("record %s condition on Backup %s/%s: %w", typ, b.Namespace, b.Name, err)
	}
	return nil
}
