package planrecord

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// EtcdStrategy returns the name of the Etcd strategy plan's BackupClass
// binds its application to, or "" when it binds another kind of strategy,
// none, or the class does not exist: such a Plan is not the driver's, and
// the driver neither acts on it nor writes to it.
func EtcdStrategy(ctx context.Context, c client.Reader, plan *backupsv1alpha1.Plan) (string, error) {
	if plan.Spec.BackupClassName == "" {
		return "", nil
	}
	var class backupsv1alpha1.BackupClass
	if err := c.Get(ctx, client.ObjectKey{Name: plan.Spec.BackupClassName}, &class); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read BackupClass %s of Plan %s/%s: %w", plan.Spec.BackupClassName, plan.Namespace, plan.Name, err)
	}
	s, ok := class.StrategyFor(plan.Spec.ApplicationRef)
	if !ok || !strategyv1alpha1.IsEtcd(s.StrategyRef) {
		return "", nil
	}
	return s.StrategyRef.Name, nil
}

// PlansOfClass maps a BackupClass to the Plans that name it: a class that
// appears or changes may make a Plan the driver's (or no longer). Classes
// change rarely, so the Plans are listed and filtered rather than indexed.
func PlansOfClass(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var plans backupsv1alpha1.PlanList
		if err := c.List(ctx, &plans); err != nil {
			log.FromContext(ctx).Error(err, "list Plans to wake for a BackupClass", "backupClass", obj.GetName())
			return nil
		}
		var out []reconcile.Request
		for _, p := range plans.Items {
			if p.Spec.BackupClassName == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
			}
		}
		return out
	}
}
