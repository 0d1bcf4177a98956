package restore

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// setSuspend sets the HelmRelease's spec.suspend, guarded by its
// resourceVersion so a concurrent edit is re-read rather than overwritten.
func (r *Reconciler) setSuspend(ctx context.Context, hr *helmv2.HelmRelease, suspend bool) error {
	patch := client.MergeFromWithOptions(hr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	hr.Spec.Suspend = suspend
	if err := r.Client.Patch(ctx, hr, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set suspend=%t on HelmRelease %s/%s: %w", suspend, hr.Namespace, hr.Name, err)
	}
	return nil
}

// helmReleaseCondition says whether the HelmRelease reconciled Ready after
// the restore, or nil when the restore never touched it.
func helmReleaseCondition(o *observation) *metav1.Condition {
	if o.capture == nil {
		return nil
	}
	c := &metav1.Condition{Type: backupsv1alpha1.RestoreConditionHelmReleaseReconciled, Status: metav1.ConditionUnknown}
	set := func(s metav1.ConditionStatus, r backupsv1alpha1.RestoreReason, msg string) *metav1.Condition {
		c.Status, c.Reason, c.Message = s, string(r), msg
		return c
	}
	switch {
	case o.capture.hrPrior == hrAbsent:
		return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseNotFound,
			"there was no HelmRelease "+o.app+"; the EtcdCluster is not managed by Flux")
	case o.capture.hrPrior == hrSuspended:
		return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseLeftSuspended,
			"HelmRelease "+o.app+" was suspended before the restore and is left suspended")
	case o.hr == nil:
		return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseNotFound, "HelmRelease "+o.app+" no longer exists")
	case o.hr.Spec.Suspend:
		return set(metav1.ConditionUnknown, backupsv1alpha1.ReasonHelmReleaseReconciling, "HelmRelease "+o.app+" is still suspended")
	}
	ready := meta.FindStatusCondition(o.hr.Status.Conditions, "Ready")
	// Ready must describe the resumed generation, not the one before the
	// suspension; conditions without their own generation fall back to
	// the status-level one.
	gen := int64(0)
	if ready != nil {
		gen = ready.ObservedGeneration
		if gen == 0 {
			gen = o.hr.Status.ObservedGeneration
		}
	}
	if ready == nil || gen < o.hr.Generation {
		return set(metav1.ConditionUnknown, backupsv1alpha1.ReasonHelmReleaseReconciling,
			"waiting for HelmRelease "+o.app+" to reconcile its resumed generation")
	}
	if ready.Status == metav1.ConditionTrue {
		return set(metav1.ConditionTrue, backupsv1alpha1.ReasonHelmReleaseReady, "HelmRelease "+o.app+" reconciled Ready after the restore")
	}
	return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseNotReady,
		fmt.Sprintf("HelmRelease %s is not Ready after the restore: %s: %s", o.app, ready.Reason, ready.Message))
}
