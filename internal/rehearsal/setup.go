package rehearsal

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
)

// JobSelector selects rehearsal Jobs.
func JobSelector() labels.Selector {
	req, err := labels.NewRequirement(backupsv1alpha1.RehearsalLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// SetupWithManager wires the watches: a dry run is woken by its
// RestoreJob, its Backup and its Job; nothing is polled. The manager's Job
// cache holds only staging Jobs, so rehearsal Jobs get a cache of their
// own, started with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	jobs, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&batchv1.Job{}: {Label: JobSelector()}}})
	if err != nil {
		return fmt.Errorf("rehearsal Job cache: %w", err)
	}
	if err := mgr.Add(jobs); err != nil {
		return err
	}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcd-rehearsal").
		WithOptions(opts).
		For(&backupsv1alpha1.RestoreJob{}).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.dryRunsOf(c))).
		WatchesRawSource(source.Kind(jobs, client.Object(&batchv1.Job{}),
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &backupsv1alpha1.RestoreJob{}, handler.OnlyControllerOwner()))).
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
			if rj.Spec.BackupRef.Name == obj.GetName() && !rj.Status.Phase.IsTerminal() && restore.IsDryRun(rj) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rj)})
			}
		}
		return out
	}
}
