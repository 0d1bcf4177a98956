package restore

import (
	"context"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// MemberPVCLabels selects the member PVCs of the cluster a restore replaces;
// the manager restricts its PVC cache to them.
func MemberPVCLabels() map[string]string {
	return map[string]string{instanceLabel: clusterName}
}

// SetupWithManager wires the watches: everything a restore waits for wakes
// the RestoreJobs of that namespace; nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	byNamespace := handler.EnqueueRequestsFromMapFunc(r.jobsInNamespace(mgr.GetClient()))
	clusterOnly := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == clusterName })
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcd-restore").
		WithOptions(opts).
		For(&backupsv1alpha1.RestoreJob{}).
		Watches(&backupsv1alpha1.Backup{}, byNamespace).
		Watches(&coordinationv1.Lease{}, byNamespace).
		Watches(&etcdv1alpha2.EtcdSnapshot{}, byNamespace).
		Watches(&etcdv1alpha2.EtcdCluster{}, byNamespace, builder.WithPredicates(clusterOnly)).
		Watches(&corev1.PersistentVolumeClaim{}, byNamespace).
		Watches(&helmv2.HelmRelease{}, byNamespace).
		Complete(r)
}

// jobsInNamespace maps an object to the RestoreJobs of its namespace that may
// still act or report: unfinished ones and those still holding a finalizer
// or waiting to report on their HelmRelease.
func (r *Reconciler) jobsInNamespace(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var jobs backupsv1alpha1.RestoreJobList
		if err := c.List(ctx, &jobs, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, j := range jobs.Items {
			if j.Status.Phase.IsTerminal() && len(j.Finalizers) == 0 && reportedHelmRelease(&j) {
				continue
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&j)})
		}
		return out
	}
}

func reportedHelmRelease(j *backupsv1alpha1.RestoreJob) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == backupsv1alpha1.RestoreConditionHelmReleaseReconciled {
			switch backupsv1alpha1.RestoreReason(c.Reason) {
			case backupsv1alpha1.ReasonHelmReleaseReady, backupsv1alpha1.ReasonHelmReleaseLeftSuspended,
				backupsv1alpha1.ReasonHelmReleaseNotFound:
				return true
			}
			return false
		}
	}
	return j.Status.Phase == backupsv1alpha1.RestoreJobPhaseFailed
}
