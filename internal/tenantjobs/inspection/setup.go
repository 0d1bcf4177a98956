package inspection

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
)

var (
	inspectionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_inspections_total",
		Help: "Backup inspections that ended, by outcome (the Inspected condition's reason).",
	}, []string{"outcome"})
	contentDropsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "etcd_backup_driver_content_drops_total",
		Help: "Backups marked ContentDrop: they hold markedly less than the previous good Backup of their application.",
	})
)

func init() { metrics.Registry.MustRegister(inspectionsTotal, contentDropsTotal) }

// SetupWithManager registers the controller: Ready Etcd Backups, woken by
// their inspection Jobs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	r.legacy = &legacyChecked{}
	ready := predicate.NewPredicateFuncs(func(o client.Object) bool {
		b, ok := o.(*backupsv1alpha1.Backup)
		return ok && backupdeletion.IsEtcdBackup(b) && b.Status.Phase == backupsv1alpha1.BackupPhaseReady
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Backup{}, builder.WithPredicates(ready)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(backupOfJob)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// backupOfJob wakes the Backup an inspection Job belongs to.
func backupOfJob(_ context.Context, o client.Object) []reconcile.Request {
	if _, ok := o.GetLabels()[backupsv1alpha1.InspectionLabel]; !ok {
		return nil
	}
	name := backupOwner(o)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}
