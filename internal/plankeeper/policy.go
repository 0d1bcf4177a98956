package plankeeper

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// readPolicy reads the Plan's settings within the bounds of its strategy,
// holds those the migration found in conflict, and says on the PolicyValid
// condition what applies: a Warning Event goes with each change of a
// condition that is not True.
func (r *Reconciler) readPolicy(ctx context.Context, w *work, strategy string) error {
	sp, err := strategypolicy.Of(ctx, r.Client, strategy)
	if err != nil {
		return fmt.Errorf("read the retention bounds of strategy %s: %w", strategy, err)
	}
	plan := w.plan
	w.policy = planpolicy.ParsePlan(plan, boundsOf(sp.Retention))
	var held []string
	for _, c := range w.conflicts {
		w.policy.Hold(c.Annotation)
		held = append(held, c.String())
	}

	status, reason, msg := metav1.ConditionTrue, backupsv1alpha1.PlanReasonPolicyValid, w.policy.Summary()
	switch {
	case len(held) > 0:
		status, reason = metav1.ConditionFalse, backupsv1alpha1.PlanReasonMigrationConflict
		msg = strings.Join(held, "; ") + "; nothing was moved and these settings are not applied until the two agree or the old field is removed; " + msg
	case !w.policy.Valid():
		status, reason = metav1.ConditionFalse, planpolicy.Reason(w.policy.Problems[0].Annotation)
	case len(w.policy.Notes) > 0:
		reason = backupsv1alpha1.PlanReasonPolicyBounded
	}
	w.set(backupsv1alpha1.PlanConditionPolicyValid, status, reason, msg)
	if status == metav1.ConditionFalse {
		was := meta.FindStatusCondition(plan.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
		if was == nil || was.Reason != reason || was.Message != textlimit.Message(msg) {
			r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, reason, "Validate", "%s", textlimit.Note(msg))
		}
	}
	return nil
}

// boundsOf reads the platform admin's retention defaults and bounds (a
// StrategyPolicy's spec.retention) as planpolicy takes them: unset is 0,
// no default and no bound.
func boundsOf(ret driverv1alpha1.Retention) planpolicy.Bounds {
	var b planpolicy.Bounds
	if ret.DefaultKeepLast != nil {
		b.DefaultKeepLast = *ret.DefaultKeepLast
	}
	if ret.DefaultMaxAge != nil {
		b.DefaultMaxAge = ret.DefaultMaxAge.Duration
	}
	if ret.MaxKeepLast != nil {
		b.MaxKeepLast = *ret.MaxKeepLast
	}
	if ret.MaxMaxAge != nil {
		b.MaxMaxAge = ret.MaxMaxAge.Duration
	}
	return b
}
