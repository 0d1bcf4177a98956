package backupdeletion

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// maxMessage keeps condition messages inside the CRD's limit.
const maxMessage = 32768

// setCleanupCondition records on the Backup why its cleanup is blocked.
// Backup has no status subresource, so this is a patch of the object.
func (r *Reconciler) setCleanupCondition(ctx context.Context, b *backupsv1alpha1.Backup, reason, msg string) error {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	before := b.DeepCopy()
	changed := meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type:               backupsv1alpha1.BackupConditionCleanup,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: b.Generation,
	})
	if !changed {
		return nil
	}
	if err := r.Client.Patch(ctx, b, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("record cleanup condition on Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}
