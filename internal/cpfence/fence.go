package cpfence

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// Kamaji's version statuses that say its control plane no longer accepts
// tenant writes: WriteLimited once the read-only switch is enforced,
// NotReady or Sleeping when no kube-apiserver runs at all.
var writesStopped = map[string]bool{"WriteLimited": true, "NotReady": true, "Sleeping": true}

// readOnly blocks every tenant write.
var readOnly = kamajiv1alpha1.WritePermissions{BlockCreate: true, BlockUpdate: true, BlockDelete: true}

// Fence makes t read-only for restore uid, recording in the same patch who
// fenced it and the permissions it had. A control plane fenced by another
// restore (one that died without lifting it) keeps the prior permissions
// that restore recorded: those are the tenant's, not the fence's. The patch
// is guarded by t's resourceVersion, so a concurrent edit is read again
// rather than lost.
func Fence(ctx context.Context, c client.Client, t *kamajiv1alpha1.TenantControlPlane, uid types.UID) error {
	if FencedBy(t) == uid && Fenced(t) {
		return nil
	}
	prior := t.GetAnnotations()[backupsv1alpha1.PriorWritePermissionsAnnotation]
	if FencedBy(t) == "" || prior == "" {
		raw, err := json.Marshal(t.Spec.WritePermissions)
		if err != nil {
			return err
		}
		prior = string(raw)
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	ann := t.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[backupsv1alpha1.FencedByAnnotation] = string(uid)
	ann[backupsv1alpha1.PriorWritePermissionsAnnotation] = prior
	delete(ann, backupsv1alpha1.RestartedPodsAnnotation)
	t.SetAnnotations(ann)
	t.Spec.WritePermissions = readOnly
	if err := c.Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("fence TenantControlPlane %s: %w", Key(t), err)
	}
	return nil
}

// Fenced reports whether t's spec blocks every tenant write.
func Fenced(t *kamajiv1alpha1.TenantControlPlane) bool { return t.Spec.WritePermissions == readOnly }

// Acknowledged reports whether Kamaji says t stopped taking tenant writes.
func Acknowledged(t *kamajiv1alpha1.TenantControlPlane) bool {
	return Fenced(t) && writesStopped[t.Status.KubernetesResources.Version.Status]
}

// Lift puts back the permissions t had before restore uid fenced it and
// removes the fence's annotations. A control plane fenced by someone else
// is left alone; one already lifted is a no-op.
func Lift(ctx context.Context, c client.Client, t *kamajiv1alpha1.TenantControlPlane, uid types.UID) error {
	if FencedBy(t) != uid {
		return nil
	}
	prior, err := PriorPermissions(t)
	if err != nil {
		// An unreadable record (edited by hand): open the control plane
		// rather than leave it read-only for good.
		prior = kamajiv1alpha1.WritePermissions{}
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	ann := t.GetAnnotations()
	delete(ann, backupsv1alpha1.FencedByAnnotation)
	delete(ann, backupsv1alpha1.PriorWritePermissionsAnnotation)
	delete(ann, backupsv1alpha1.RestartedPodsAnnotation)
	t.SetAnnotations(ann)
	t.Spec.WritePermissions = prior
	if err := c.Patch(ctx, t, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("lift the fence of TenantControlPlane %s: %w", Key(t), err)
	}
	return nil
}

// PriorPermissions reads the permissions recorded when t was fenced.
func PriorPermissions(t *kamajiv1alpha1.TenantControlPlane) (kamajiv1alpha1.WritePermissions, error) {
	var p kamajiv1alpha1.WritePermissions
	raw := t.GetAnnotations()[backupsv1alpha1.PriorWritePermissionsAnnotation]
	if raw == "" {
		return p, nil
	}
	if len(raw) > 256 {
		return p, fmt.Errorf("annotation %s is too long", backupsv1alpha1.PriorWritePermissionsAnnotation)
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return kamajiv1alpha1.WritePermissions{}, fmt.Errorf("annotation %s: %w", backupsv1alpha1.PriorWritePermissionsAnnotation, err)
	}
	return p, nil
}
