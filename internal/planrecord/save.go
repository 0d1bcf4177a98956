package planrecord

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Update is what one reconcile wants on a Plan: the whole record, and the
// conditions of the types its controller owns (Set replaces them by type;
// Remove drops types). Conditions of any other type (Cozystack's Plan
// controller's) are left as the API server has them.
type Update struct {
	Record Record
	Set    []metav1.Condition
	Remove []string
}

// Condition is a condition of plan's generation with its message cut (it
// quotes tenant input, and one over the CRD's limit would make every status
// write fail).
func Condition(plan *backupsv1alpha1.Plan, condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: reason,
		Message: textlimit.Message(message), ObservedGeneration: plan.Generation}
}

// Save writes u to plan (as read): the annotation with a metadata patch and
// the conditions with a status patch, each only when it changes and each
// with the resourceVersion it was computed from. A concurrent write (the
// other controller's, Cozystack's) makes it fail with Conflict instead of
// being overwritten; the caller reconciles again from what is stored
// (apierrors.IsConflict). A Plan that is gone is not an error.
func Save(ctx context.Context, c client.Client, keys provenance.Keys, plan *backupsv1alpha1.Plan, u Update) error {
	encoded, err := Encode(ctx, keys, plan, u.Record)
	if err != nil {
		return err
	}
	live := plan.DeepCopy()
	if live.Annotations[Annotation] != encoded {
		base := live.DeepCopy()
		if live.Annotations == nil {
			live.Annotations = map[string]string{}
		}
		live.Annotations[Annotation] = encoded
		if err := c.Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return ignoreGone(err, "write the record on", plan)
		}
	}
	conds := slices.Clone(live.Status.Conditions)
	for _, t := range u.Remove {
		meta.RemoveStatusCondition(&conds, t)
	}
	for _, cond := range u.Set {
		meta.SetStatusCondition(&conds, cond)
	}
	if equalConditions(conds, live.Status.Conditions) {
		return nil
	}
	base := live.DeepCopy()
	live.Status.Conditions = conds
	if err := c.Status().Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreGone(err, "write the conditions of", plan)
	}
	return nil
}

func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message &&
			x.ObservedGeneration == y.ObservedGeneration && x.LastTransitionTime.Equal(&y.LastTransitionTime)
	})
}

func ignoreGone(err error, what string, plan *backupsv1alpha1.Plan) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%s Plan %s/%s: %w", what, plan.Namespace, plan.Name, err)
}
