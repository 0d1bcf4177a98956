package backupjob

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// Field indexes on BackupJobs, used to find the jobs an event concerns.
const (
	indexClassName = "spec.backupClassName"
	indexAppName   = "spec.applicationRef.name"
)

// SetupWithManager registers the controller: it reconciles BackupJobs and
// wakes the jobs that wait on a snapshot, cluster, class, strategy,
// application or restore claim when that object changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	idx := mgr.GetFieldIndexer()
	ctx := context.Background()
	if err := idx.IndexField(ctx, &backupsv1alpha1.BackupJob{}, indexClassName, func(o client.Object) []string {
		return []string{o.(*backupsv1alpha1.BackupJob).Spec.BackupClassName}
	}); err != nil {
		return fmt.Errorf("index BackupJobs by class: %w", err)
	}
	if err := idx.IndexField(ctx, &backupsv1alpha1.BackupJob{}, indexAppName, func(o client.Object) []string {
		return []string{o.(*backupsv1alpha1.BackupJob).Spec.ApplicationRef.Name}
	}); err != nil {
		return fmt.Errorf("index BackupJobs by application: %w", err)
	}

	return ctrl.NewControllerManagedBy(mgr).
		Named("backupjob").
		// Our own status writes change no generation: do not wake on them.
		For(&backupsv1alpha1.BackupJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&etcdv1alpha2.EtcdSnapshot{}).
		// A snapshot that ends frees a slot for the jobs waiting in its
		// namespace.
		Watches(&etcdv1alpha2.EtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.slotFreed(r.jobsIn(nil))), builder.WithPredicates(snapshotEnds)).
		Watches(&etcdv1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.jobsIn(nil))).
		Watches(&appsv1alpha1.Etcd{}, handler.EnqueueRequestsFromMapFunc(r.jobsIn(appName))).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfClaim)).
		Watches(&backupsv1alpha1.BackupClass{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfClass)).
		Watches(&strategyv1alpha1.Etcd{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfStrategy)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

func appName(o client.Object) (string, bool) { return o.GetName(), true }

// jobsOfClaim maps a restore claim (a Lease in the driver's namespace) to
// the unfinished jobs of the namespace whose cluster it claims.
func (r *Reconciler) jobsOfClaim(ctx context.Context, o client.Object) []reconcile.Request {
	ns, ok := o.GetLabels()[claim.TargetNamespaceLabel]
	if !ok || o.GetNamespace() != r.Claims.Namespace {
		return nil
	}
	return r.unfinished(ctx, client.InNamespace(ns))
}

// jobsOfStrategy maps a strategy to the unfinished jobs of the classes that
// bind it.
func (r *Reconciler) jobsOfStrategy(ctx context.Context, o client.Object) []reconcile.Request {
	var classes backupsv1alpha1.BackupClassList
	if err := r.List(ctx, &classes); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list BackupClasses to wake")
		return nil
	}
	var reqs []reconcile.Request
	for _, c := range classes.Items {
		for _, s := range c.Spec.Strategies {
			if s.StrategyRef.Kind == strategyv1alpha1.EtcdStrategyKind && s.StrategyRef.Name == o.GetName() {
				reqs = append(reqs, r.unfinished(ctx, client.MatchingFields{indexClassName: c.Name})...)
				break
			}
		}
	}
	return reqs
}

// jobsIn maps an object to the unfinished jobs in its namespace, for the
// application byApp names (all applications when byApp is nil).
func (r *Reconciler) jobsIn(byApp func(client.Object) (string, bool)) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		opts := []client.ListOption{client.InNamespace(o.GetNamespace())}
		if byApp != nil {
			app, ok := byApp(o)
			if !ok {
				return nil
			}
			opts = append(opts, client.MatchingFields{indexAppName: app})
		}
		return r.unfinished(ctx, opts...)
	}
}

func (r *Reconciler) jobsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return r.unfinished(ctx, client.MatchingFields{indexClassName: o.GetName()})
}

func (r *Reconciler) unfinished(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var jobs backupsv1alpha1.BackupJobList
	if err := r.List(ctx, &jobs, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list BackupJobs to wake")
		return nil
	}
	var reqs []reconcile.Request
	for _, j := range jobs.Items {
		if !j.Status.Phase.IsTerminal() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: j.Namespace, Name: j.Name}})
		}
	}
	return reqs
}
