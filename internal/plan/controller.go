// Package plan runs Plans: it starts a BackupJob at each cron time (in the
// Plan's time zone, within a starting deadline, honouring the concurrency
// policy), prunes the Plan's finished BackupJobs to the history limits,
// applies retention to the Plan's Backups, and runs the Plan's drills
// (dry-run RestoreJobs of its newest good Backup on spec.drill.cron) and
// judges whether a rehearsal is overdue.
package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "plan"

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
	// Keys verify Backups: retention counts only Backups the driver
	// recorded for this Plan, ordered by the time it signed.
	Keys provenance.Keys
	// Schema says which Plan fields the installed CRD serves; nil assumes
	// the driver's own CRD.
	Schema *servedschema.Schema
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile validates the schedule, starts the due run if any, prunes job
// history and Backups, writes status once, and asks to be called again at
// the next run time.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plan backupsv1alpha1.Plan
	if err := r.Client.Get(ctx, req.NamespacedName, &plan); err != nil {
		if apierrors.IsNotFound(err) {
			forgetDrillMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if plan.DeletionTimestamp != nil {
		// Owned BackupJobs and drills go with the Plan through garbage
		// collection.
		forgetDrillMetrics(plan.Namespace, plan.Name)
		return ctrl.Result{}, nil
	}
	before := plan.DeepCopy()
	now := r.Clock.Now()

	r.noteServedFields(ctx, &plan)
	sched, err := r.validate(&plan)
	if err != nil {
		// A failed status write is worth retrying; the bad spec is not.
		if perr := r.patchStatus(ctx, before, &plan); perr != nil {
			return ctrl.Result{}, perr
		}
		return ctrl.Result{}, reconcile.TerminalError(err)
	}

	obs, err := r.observe(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}

	next, runErr := r.runDue(ctx, &plan, obs, sched, now)
	r.noteNextRun(ctx, &plan, next)
	pruneErr := r.pruneJobs(ctx, &plan, obs)
	retainErr := r.applyRetention(ctx, &plan, obs, now)
	plan.Status.LastSuccessfulBackup = NewestReady(obs.backups)
	nextDrill, drillErr := r.drill(ctx, &plan, &before.Status, obs, now)
	next = earliest(next, nextDrill)

	if err := errors.Join(runErr, pruneErr, retainErr, drillErr, r.patchStatus(ctx, before, &plan)); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	// Never a zero delay: that would mean "no requeue".
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// patchStatus writes the status changes made to plan since before.
func (r *Reconciler) patchStatus(ctx context.Context, before, plan *backupsv1alpha1.Plan) error {
	if err := r.Client.Status().Patch(ctx, plan, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patch status of Plan %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller: Plans, the BackupJobs they own,
// their Backups (by the plan label) and RestoreJobs (which pin Backups
// against retention).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Plan{}).
		Owns(&backupsv1alpha1.BackupJob{}).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(planOfBackup)).
		Watches(&backupsv1alpha1.RestoreJob{}, handler.EnqueueRequestsFromMapFunc(r.planOfRestore)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// planOfBackup maps a Backup to the Plan its spec names (a label value may
// only be a hash of a long Plan name).
func planOfBackup(_ context.Context, obj client.Object) []reconcile.Request {
	b, ok := obj.(*backupsv1alpha1.Backup)
	if !ok || b.Spec.PlanRef == nil || b.Spec.PlanRef.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.PlanRef.Name}}}
}

// planOfRestore maps a RestoreJob to the Plan of the Backup it reads (a
// finished restore may release a Backup that retention had to keep) and
// to the Plan that owns it (a drill whose end the Plan records).
func (r *Reconciler) planOfRestore(ctx context.Context, obj client.Object) []reconcile.Request {
	rj, ok := obj.(*backupsv1alpha1.RestoreJob)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	if ref := metav1.GetControllerOf(rj); ref != nil && ref.Kind == "Plan" && strings.HasPrefix(ref.APIVersion, backupsv1alpha1.GroupVersion.Group+"/") {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rj.Namespace, Name: ref.Name}})
	}
	if rj.Spec.BackupRef.Name == "" {
		return out
	}
	var b backupsv1alpha1.Backup
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: rj.Spec.BackupRef.Name}, &b); err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "read the Backup of a RestoreJob", "namespace", rj.Namespace, "backup", rj.Spec.BackupRef.Name)
		}
		return out
	}
	return append(out, planOfBackup(ctx, &b)...)
}
