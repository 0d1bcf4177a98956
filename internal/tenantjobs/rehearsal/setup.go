package rehearsal

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// SetupWithManager wires the watches: a dry run is woken by its
// RestoreJob, its Backup, its Job (the manager's Job cache holds every
// Job the driver makes), the end of its census and, while it waits for a
// rehearsal slot, another dry run's start or end (queue.go); nothing is
// polled but a census whose wake was lost.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	c := mgr.GetClient()
	r.wake = make(chan event.GenericEvent, 1024)
	censuses := r.newCensuses(mgr.GetLogger().WithName("census"), func(job types.NamespacedName) {
		select {
		case r.wake <- event.GenericEvent{Object: &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}}}:
		default: // full: the dry run looks again after censusPoll
		}
	})
	r.mu.Lock()
	r.censuses = censuses
	r.mu.Unlock()
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcd-rehearsal").
		WithOptions(opts).
		For(&backupsv1alpha1.RestoreJob{}).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.dryRunsOf(c))).
		Watches(&backupsv1alpha1.RestoreJob{}, handler.EnqueueRequestsFromMapFunc(r.queuedOf(c))).
		Watches(&batchv1.Job{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&backupsv1alpha1.RestoreJob{}, handler.OnlyControllerOwner())).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// dryRunsOf: a Backup wakes the dry runs of its namespace that name it,
// and those to a point (any Backup of theirs may be, or have been, their
// base: point.go).
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
			if (rj.Spec.BackupRef.Name == obj.GetName() || toAPoint(rj)) && !rj.Status.Phase.IsTerminal() && restoreoptions.IsDryRun(rj) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rj)})
			}
		}
		return out
	}
}
