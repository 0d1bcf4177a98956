// Package plan is the driver's own Plan scheduler, for platforms without
// Cozystack's Plan controller (and the sandbox): it starts a BackupJob at
// each cron time (in the time zone of the cron's CRON_TZ= prefix, within a
// starting deadline, honouring the concurrency policy and suspension the
// Plan's annotations set) and prunes the Plan's finished BackupJobs to the
// history limits. It acts only on Plans of the Etcd strategy. What applies
// to a Plan's Backups whoever schedules it (retention, drills) is
// internal/plankeeper's, which runs whether this controller does or not.
package plan

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// ControllerName names the controller in logs, metrics, Events and
// --disable-controllers.
const ControllerName = "plan"

// conflictRetry is how soon a reconcile whose write met a newer Plan
// decides again.
const conflictRetry = time.Second

// Reconciler schedules one Plan at a time.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads the API server directly; used to confirm a BackupJob
	// the cache has not seen yet.
	APIReader client.Reader
	// Recorder emits Events on Plans.
	Recorder events.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Keys sign and verify the driver's record on a Plan.
	Keys provenance.Keys
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile validates the schedule, starts the due run if any, prunes job
// history, writes the record and conditions once, and asks to be called
// again at the next run time.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plan backupsv1alpha1.Plan
	if err := r.Client.Get(ctx, req.NamespacedName, &plan); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if plan.DeletionTimestamp != nil {
		// Owned BackupJobs go with the Plan through garbage collection.
		return ctrl.Result{}, nil
	}
	if strategy, err := planrecord.EtcdStrategy(ctx, r.Client, &plan); err != nil || strategy == "" {
		return ctrl.Result{}, err
	}
	rec, ignored, err := planrecord.Read(ctx, r.Keys, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ignored != "" {
		log.FromContext(ctx).Info("the Plan's record is not the driver's; starting from its BackupJobs", "annotation", planrecord.Annotation, "why", ignored)
	}
	now := r.Clock.Now()
	w := &work{plan: &plan, rec: rec, policy: planpolicy.ParsePlan(&plan, planpolicy.Bounds{}).Scheduler}

	sched, err := r.validate(w)
	if err != nil {
		// A failed write is worth retrying; the bad spec is not.
		if serr := r.save(ctx, w); serr != nil {
			return r.retry(ctx, serr)
		}
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	obs, err := r.observe(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	next, runErr := r.runDue(ctx, w, obs, sched, now)
	pruneErr := r.pruneJobs(ctx, w, obs)
	if err := r.save(ctx, w); err != nil {
		return r.retry(ctx, err)
	}
	if err := errors.Join(runErr, pruneErr); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	// Never a zero delay: that would mean "no requeue".
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// work is what one reconcile decides about a Plan: its record and the
// conditions of the scheduler's types, written once at the end.
type work struct {
	plan   *backupsv1alpha1.Plan
	rec    planrecord.Record
	policy planpolicy.Scheduler
	update planrecord.Update
}

func (r *Reconciler) save(ctx context.Context, w *work) error {
	w.update.Record = w.rec
	return planrecord.Save(ctx, r.Client, r.Keys, w.plan, w.update)
}

// retry decides again soon after a write lost to a concurrent one (the
// plan policy controller's, Cozystack's): every step is idempotent.
func (r *Reconciler) retry(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("the Plan changed since it was read; deciding again", "reason", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// SetupWithManager registers the controller: Plans (their spec and the
// tenant's annotations, not the driver's own writes), the BackupJobs they
// own, and BackupClasses (a Plan whose class appears or changes may become
// the driver's).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Plan{}, builder.WithPredicates(planrecord.Changes())).
		Owns(&backupsv1alpha1.BackupJob{}).
		Watches(&backupsv1alpha1.BackupClass{}, handler.EnqueueRequestsFromMapFunc(planrecord.PlansOfClass(mgr.GetClient()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}
