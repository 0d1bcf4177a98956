// Package plankeeper applies a Plan's policy to its Backups, whoever
// schedules the Plan (Cozystack's Plan controller or the driver's own,
// internal/plan): retention (never the newest Ready Backup, the newest
// inspected one, one a restore reads, or one held for a content drop),
// drills (dry-run RestoreJobs of the newest good Backup on the Plan's drill
// schedule) and the judgement of whether a rehearsal is overdue. The
// tenant's settings are the Plan's annotations (internal/planpolicy),
// within the platform admin's bounds; what the controller records goes in
// the Plan's signed record (internal/planrecord). It acts only on Plans of
// the Etcd strategy, and it moves settings a Plan still holds in fields of
// the driver's earlier Plan CRD to annotations, once (migrate.go).
package plankeeper

import (
	"context"
	"errors"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// --disable-controllers. It is not "plan": turning off the driver's
// scheduler where Cozystack's Plan controller schedules leaves it on.
const ControllerName = "plankeeper"

// conflictRetry is how soon a reconcile whose write met a newer Plan
// decides again.
const conflictRetry = time.Second

// Reconciler keeps one Plan's Backups at a time.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads the API server directly: RestoreJobs before a
	// Backup is deleted, a drill after AlreadyExists, and a Plan's fields
	// of the earlier CRD when it is first seen.
	APIReader client.Reader
	// Recorder emits Events on Plans.
	Recorder events.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Keys verify Backups (retention counts only Backups the driver
	// recorded for this Plan) and sign the Plan's record and the drills'
	// names.
	Keys provenance.Keys
}

// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// work is what one reconcile decides about a Plan.
type work struct {
	plan *backupsv1alpha1.Plan
	// stored is the record as read (what is already written); rec is the
	// one this reconcile writes.
	stored, rec planrecord.Record
	policy      planpolicy.Policy
	// conflicts are settings held both in a field of the earlier CRD and
	// in an annotation, differently: they are not applied.
	conflicts []planpolicy.Legacy
	update    planrecord.Update
}

// Reconcile moves earlier settings once, reads the policy, prunes Backups,
// runs the drill, writes the record and conditions once, and asks to be
// called again at the next drill or when a rehearsal would turn overdue.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plan backupsv1alpha1.Plan
	if err := r.Client.Get(ctx, req.NamespacedName, &plan); err != nil {
		if apierrors.IsNotFound(err) {
			forgetDrillMetrics(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if plan.DeletionTimestamp != nil {
		// Drills go with the Plan through garbage collection; Backups
		// stay (they are not the Plan's to delete).
		forgetDrillMetrics(plan.Namespace, plan.Name)
		return ctrl.Result{}, nil
	}
	strategy, err := planrecord.EtcdStrategy(ctx, r.Client, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if strategy == "" {
		forgetDrillMetrics(plan.Namespace, plan.Name)
		return ctrl.Result{}, nil
	}
	rec, ignored, err := planrecord.Read(ctx, r.Keys, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ignored != "" {
		log.FromContext(ctx).Info("the Plan's record is not the driver's; starting from its Backups and drills", "annotation", planrecord.Annotation, "why", ignored)
	}
	w := &work{plan: &plan, stored: rec, rec: rec}
	if !rec.SettingsRead {
		if err := r.migrate(ctx, w); err != nil {
			return r.retry(ctx, err)
		}
	}
	if err := r.readPolicy(ctx, w, strategy); err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	obs, err := r.observe(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	retainErr := r.applyRetention(ctx, w, obs, now)
	w.rec.LastSuccessfulBackup = NewestReady(obs.backups)
	next, drillErr := r.drill(ctx, w, obs, now)

	w.update.Record = w.rec
	if err := planrecord.Save(ctx, r.Client, r.Keys, w.plan, w.update); err != nil {
		return r.retry(ctx, err)
	}
	if err := errors.Join(retainErr, drillErr); err != nil {
		return ctrl.Result{}, err
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// retry decides again soon after a write lost to a concurrent one (the
// driver's scheduler's, Cozystack's, the tenant's): every step is
// idempotent.
func (r *Reconciler) retry(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("the Plan changed since it was read; deciding again", "reason", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// set records a condition of the controller's for the write at the end of
// the reconcile.
func (w *work) set(condType string, status metav1.ConditionStatus, reason, message string) {
	c := planrecord.Condition(w.plan, condType, status, reason, message)
	for i := range w.update.Set {
		if w.update.Set[i].Type == condType {
			w.update.Set[i] = c
			return
		}
	}
	w.update.Set = append(w.update.Set, c)
}

// remove drops a condition of the controller's in the write at the end.
func (w *work) remove(condType string) {
	for i := range w.update.Set {
		if w.update.Set[i].Type == condType {
			w.update.Set = append(w.update.Set[:i], w.update.Set[i+1:]...)
			break
		}
	}
	w.update.Remove = append(w.update.Remove, condType)
}

// SetupWithManager registers the controller: Plans (their spec and the
// tenant's annotations, not the driver's own writes), their Backups (by
// spec.planRef), RestoreJobs (a restore pins a Backup against retention;
// a drill's end is recorded on its Plan) and BackupClasses (a Plan whose
// class appears or changes may become the driver's).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Plan{}, builder.WithPredicates(planrecord.Changes())).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(planOfBackup)).
		Watches(&backupsv1alpha1.RestoreJob{}, handler.EnqueueRequestsFromMapFunc(r.planOfRestore)).
		Watches(&backupsv1alpha1.BackupClass{}, handler.EnqueueRequestsFromMapFunc(planrecord.PlansOfClass(mgr.GetClient()))).
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
// to the Plan that controls it (a drill whose end the Plan records; the
// reconcile checks that it is one).
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
