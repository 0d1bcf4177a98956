package rehearsal

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// SetupWithManager wires the watches: a dry run is woken by its
// RestoreJob, its Backup, its Job, and, while it waits for a slot, by any
// other dry run's change (queue.go) (the manager's Job cache holds every
// Job the driver makes); nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcd-rehearsal").
		WithOptions(opts).
		For(&backupsv1alpha1.RestoreJob{}).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.dryRunsOf(c))).
		Watches(&backupsv1alpha1.RestoreJob{}, handler.EnqueueRequestsFromMapFunc(r.queuedOf(c))).
		Watches(&batchv1.Job{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&backupsv1alpha1.RestoreJob{}, handler.OnlyControllerOwner())).
		Complete(r)
}

// dryRunsOf: a Backup wakes the dry runs of its namespace that name it.
func (r *Reconciler) dryRunsOf(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list backupsv1alpha1.RestoreJobList
		if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list RestoreJobs to wake", "namespace", obj.GetNamespace())
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			rj := &list.Items[i]
			if rj.Spec.BackupRef.Name == obj.GetName() && !rj.Status.Phase.IsTerminal() && restoreoptions.IsDryRun(rj) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rj)})
			}
		}
		return out
	}
}
