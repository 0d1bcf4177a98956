package keeper

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
)

// ControllerName names the controller in logs, metrics, Events and
// --disable-controllers.
const ControllerName = "capture"

// Reconciler keeps one Plan's capture at a time.
type Reconciler struct {
	// Client reads Plans, Backups, StrategyPolicies, CaptureProgresses
	// and the driver's Deployments through the cache and writes.
	Client client.Client
	// APIReader reads the ServiceAccount, Role and RoleBinding (not
	// cached) when a Deployment is made or rolled.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Keys verify Backups and their manifests and key the names.
	Keys provenance.Keys
	// Policy decides which S3 endpoints the capture may dial.
	Policy endpointpolicy.Policy
	// Image is the driver's image (the capture runs its /etcd-stage).
	Image string
	// AllowedEndpointCIDRs and S3CAPEM are handed to the capture as to
	// every tenant Job.
	AllowedEndpointCIDRs []string
	S3CAPEM              string
	Clock                clock.PassiveClock
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=captureprogresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=captureprogresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one Plan's capture to what its settings and its newest
// good Backup ask for, and shows its window.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plan backupsv1alpha1.Plan
	if err := r.Client.Get(ctx, req.NamespacedName, &plan); err != nil {
		if apierrors.IsNotFound(err) {
			lags.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec, err := r.record(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	sp, on, err := r.wanted(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !on {
		lags.forget(plan.Namespace, plan.Name)
		if rec == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.stop(ctx, &plan, rec)
	}
	base, err := r.newestBase(ctx, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if base == nil {
		// Nothing to follow: the Plan's next good, inspected Backup
		// starts a chain (its event wakes the Plan).
		if rec != nil {
			return ctrl.Result{}, r.baseGone(ctx, &plan, rec, sp)
		}
		return ctrl.Result{}, nil
	}
	if rec == nil {
		if other, err := r.capturedBy(ctx, &plan); err != nil || other != "" {
			if other != "" {
				r.Recorder.Eventf(&plan, nil, corev1.EventTypeWarning, driverv1alpha1.CaptureReasonRefused, "Capture",
					"application %s is captured already, for Plan %s: one capture per application (two would write one chain); turn it off there first",
					plan.Spec.ApplicationRef.Name, other)
			}
			return ctrl.Result{}, err
		}
		if rec, err = r.create(ctx, &plan, base); err != nil {
			return ctrl.Result{}, err
		}
	} else if rec.Spec.BaseBackup != base.Backup.Name {
		if err := r.roll(ctx, rec, base); err != nil {
			return r.retry(ctx, err)
		}
	}
	if gapped(rec) {
		if err := r.answerGap(ctx, &plan, rec); err != nil {
			return r.retry(ctx, err)
		}
		return r.show(ctx, &plan, rec, sp)
	}
	spec, err := r.spec(ctx, &plan, rec, base, sp)
	if err != nil {
		return ctrl.Result{}, r.refuse(ctx, &plan, rec, sp, "the capture cannot start: "+err.Error())
	}
	if refusal, err := r.ensure(ctx, spec); err != nil || refusal != "" {
		if err != nil {
			return r.retry(ctx, err)
		}
		return ctrl.Result{}, r.refuse(ctx, &plan, rec, sp, refusal)
	}
	return r.show(ctx, &plan, rec, sp)
}

// retry decides again soon after a write lost to a concurrent one (the
// capture writes the record's status): every step is idempotent.
func (r *Reconciler) retry(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("an object changed since it was read; deciding again", "reason", err.Error())
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, err
}

// wanted reads whether the Plan's application is to be captured: an Etcd
// Plan that asks for it (the point-in-time annotation) whose strategy's
// policy allows it.
func (r *Reconciler) wanted(ctx context.Context, plan *backupsv1alpha1.Plan) (strategypolicy.Policy, bool, error) {
	if plan.DeletionTimestamp != nil {
		return strategypolicy.Policy{}, false, nil
	}
	strategy, err := planrecord.EtcdStrategy(ctx, r.Client, plan)
	if err != nil || strategy == "" {
		return strategypolicy.Policy{}, false, err
	}
	sp, err := strategypolicy.Of(ctx, r.Client, strategy)
	if err != nil {
		return strategypolicy.Policy{}, false, fmt.Errorf("read the point-in-time settings of strategy %s: %w", strategy, err)
	}
	asked := planpolicy.ParsePlan(plan, planpolicy.Bounds{}).PointInTime
	return sp, asked && sp.PointInTime.Enabled, nil
}

// record is the Plan's CaptureProgress: the one in its namespace the
// driver made for it (controlled by the Plan, with the driver's labels),
// found by ownership rather than by name so a key rotation never starts
// a second capture of one chain. Of several, the oldest.
func (r *Reconciler) record(ctx context.Context, plan *backupsv1alpha1.Plan) (*driverv1alpha1.CaptureProgress, error) {
	var list driverv1alpha1.CaptureProgressList
	if err := r.Client.List(ctx, &list, client.InNamespace(plan.Namespace)); err != nil {
		return nil, fmt.Errorf("list CaptureProgresses in %s: %w", plan.Namespace, err)
	}
	var mine []driverv1alpha1.CaptureProgress
	for _, cp := range list.Items {
		ref := metav1.GetControllerOf(&cp)
		if ref != nil && ref.UID == plan.UID && ref.Kind == "Plan" && cp.Labels[CaptureLabel] == cp.Name && cp.Spec.Plan == plan.Name {
			mine = append(mine, cp)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].CreationTimestamp.Before(&mine[j].CreationTimestamp) })
	return &mine[0], nil
}

// capturedBy names another Plan of plan's application whose capture
// runs (it has a record of the driver's), or "".
func (r *Reconciler) capturedBy(ctx context.Context, plan *backupsv1alpha1.Plan) (string, error) {
	var list driverv1alpha1.CaptureProgressList
	if err := r.Client.List(ctx, &list, client.InNamespace(plan.Namespace)); err != nil {
		return "", fmt.Errorf("list CaptureProgresses in %s: %w", plan.Namespace, err)
	}
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	for _, cp := range list.Items {
		if cp.Spec.Plan == plan.Name {
			continue
		}
		var other backupsv1alpha1.Plan
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: cp.Spec.Plan}, &other)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		ref := metav1.GetControllerOf(&cp)
		o := backupsv1alpha1.NormalizeApplicationRef(other.Spec.ApplicationRef)
		if ref != nil && ref.UID == other.UID && o.Kind == app.Kind && o.Name == app.Name && *o.APIGroup == *app.APIGroup {
			return other.Name, nil
		}
	}
	return "", nil
}

// name is a new record's name: keyed with the active provenance key, so
// the tenant cannot take it first.
func (r *Reconciler) name(ctx context.Context, plan *backupsv1alpha1.Plan) (string, error) {
	_, key, err := r.Keys.Active(ctx)
	if err != nil {
		return "", err
	}
	return tenantjobs.KeyedName("etcd-capture-", key, "etcd-backup-driver capture", plan.UID), nil
}

// create makes the Plan's record for a chain on base.
func (r *Reconciler) create(ctx context.Context, plan *backupsv1alpha1.Plan, base *baseBackup) (*driverv1alpha1.CaptureProgress, error) {
	name, err := r.name(ctx, plan)
	if err != nil {
		return nil, err
	}
	yes := true
	rec := &driverv1alpha1.CaptureProgress{
		ObjectMeta: metav1.ObjectMeta{Namespace: plan.Namespace, Name: name, Labels: Labels(name),
			Annotations: map[string]string{PlanAnnotation: plan.Name, ChainStartedAnnotation: r.now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Plan", Name: plan.Name,
				UID: plan.UID, Controller: &yes}}},
		Spec: driverv1alpha1.CaptureProgressSpec{Plan: plan.Name, BaseBackup: base.Backup.Name, BaseRevision: base.Revision},
	}
	if err := r.Client.Create(ctx, rec); err != nil {
		return nil, fmt.Errorf("create CaptureProgress %s/%s: %w", plan.Namespace, name, err)
	}
	log.FromContext(ctx).Info("capturing the application's changes", "record", name, "base", base.Backup.Name, "revision", base.Revision)
	before := rec.DeepCopy()
	rec.Status.Window = &driverv1alpha1.CaptureWindow{From: base.Backup.Spec.TakenAt, FromBackup: base.Backup.Name}
	return rec, r.Client.Status().Patch(ctx, rec, client.MergeFrom(before))
}

// stop removes what the driver made for the Plan's capture: the
// Deployment, the ServiceAccount's grant and the record. A look-alike is
// left alone (controlledBy).
func (r *Reconciler) stop(ctx context.Context, plan *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress) error {
	if err := r.removeWorkload(ctx, rec); err != nil {
		return err
	}
	if err := r.Client.Delete(ctx, rec); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete CaptureProgress %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	log.FromContext(ctx).Info("capture turned off; its objects are removed (the chains in S3 stay with their base Backups)", "record", rec.Name)
	r.Recorder.Eventf(plan, nil, corev1.EventTypeNormal, "CaptureStopped", "Capture",
		"point-in-time capture is off for this Plan: CaptureProgress %s and its capture are removed; the chains already in S3 stay", rec.Name)
	return nil
}
