package keeper

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// SetupWithManager registers the controller: Plans (their spec and
// annotations), their Backups (a new good one starts a new chain), the
// records (the capture's reports: at most two a minute per Plan) and the
// capture Deployments, and BackupClasses and StrategyPolicies (which
// decide whether a Plan is captured).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	lags.setClock(r.now)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Plan{}, builder.WithPredicates(planrecord.Changes())).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(planOfBackup)).
		Watches(&driverv1alpha1.CaptureProgress{}, handler.EnqueueRequestsFromMapFunc(planOfObject)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(planOfObject)).
		Watches(&backupsv1alpha1.BackupClass{}, handler.EnqueueRequestsFromMapFunc(planrecord.PlansOfClass(mgr.GetClient()))).
		Watches(&driverv1alpha1.StrategyPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allPlans)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// planOfBackup wakes the Plan a Backup's spec names.
func planOfBackup(_ context.Context, obj client.Object) []reconcile.Request {
	b, ok := obj.(*backupsv1alpha1.Backup)
	if !ok || b.Spec.PlanRef == nil || b.Spec.PlanRef.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.PlanRef.Name}}}
}

// planOfObject wakes the Plan a capture object's annotation names (a
// hint: the reconcile finds the Plan's objects by ownership).
func planOfObject(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetAnnotations()[PlanAnnotation]
	if name == "" || obj.GetLabels()[CaptureLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// allPlans wakes every Plan when a StrategyPolicy changes (an admin
// turning capture on or off, or changing its bounds; rare).
func (r *Reconciler) allPlans(ctx context.Context, _ client.Object) []reconcile.Request {
	var plans backupsv1alpha1.PlanList
	if err := r.Client.List(ctx, &plans); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Plans to wake for a StrategyPolicy")
		return nil
	}
	out := make([]reconcile.Request, 0, len(plans.Items))
	for _, p := range plans.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}
