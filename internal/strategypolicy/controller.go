package strategypolicy

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Reconciler writes each StrategyPolicy's Valid condition: whether the Etcd
// strategy of its name exists, and whether the two go together (Check).
// What acts on the settings checks them again itself (a BackupJob fails,
// the credential broker holds still); the condition tells the admin why.
type Reconciler struct {
	// Client reads policies and strategies from the cache and patches the
	// policies' status.
	Client   client.Client
	Recorder recorder.EventRecorder
}

// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile writes one policy's Valid condition when what it says changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sp driverv1alpha1.StrategyPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &sp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, err := r.validity(ctx, &sp)
	if err != nil {
		return ctrl.Result{}, err
	}
	was := meta.FindStatusCondition(sp.Status.Conditions, want.Type)
	if was != nil && was.Status == want.Status && was.Reason == want.Reason && was.Message == want.Message &&
		was.ObservedGeneration == want.ObservedGeneration {
		return ctrl.Result{}, nil
	}
	changed := was == nil || was.Status != want.Status || was.Reason != want.Reason
	patch := client.MergeFromWithOptions(sp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&sp.Status.Conditions, want)
	if err := r.Client.Status().Patch(ctx, &sp, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("write the %s condition of StrategyPolicy %s: %w", want.Type, sp.Name, err)
	}
	if changed && r.Recorder != nil {
		kind := corev1.EventTypeNormal
		if want.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(&sp, nil, kind, want.Reason, "Validate", "%s", textlimit.Note(want.Message))
	}
	return ctrl.Result{}, nil
}

// validity is the Valid condition sp calls for.
func (r *Reconciler) validity(ctx context.Context, sp *driverv1alpha1.StrategyPolicy) (metav1.Condition, error) {
	c := metav1.Condition{Type: driverv1alpha1.StrategyPolicyConditionValid, ObservedGeneration: sp.Generation}
	var s strategyv1alpha1.Etcd
	err := r.Client.Get(ctx, client.ObjectKey{Name: sp.Name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		c.Status, c.Reason = metav1.ConditionFalse, driverv1alpha1.StrategyPolicyReasonStrategyNotFound
		c.Message = fmt.Sprintf("no Etcd strategy (strategy.backups.cozystack.io) is named %q: a StrategyPolicy applies to the strategy of its own name", sp.Name)
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read Etcd strategy %q: %w", sp.Name, err)
	}
	err = Strategy{Etcd: &s, Policy: Effective(sp.Name, sp)}.Check()
	switch {
	case errors.Is(err, ErrInvalid):
		c.Status, c.Reason = metav1.ConditionFalse, driverv1alpha1.StrategyPolicyReasonBrokerNeedsLiteralDestination
		c.Message = textlimit.Message(err.Error() + "; until then BackupJobs through the strategy fail and no tenant key is issued or rotated")
	case err != nil:
		return c, err
	default:
		c.Status, c.Reason = metav1.ConditionTrue, driverv1alpha1.StrategyPolicyReasonAccepted
		c.Message = fmt.Sprintf("applies to Etcd strategy %q", sp.Name)
	}
	return c, nil
}

// SetupWithManager registers the reconciler on StrategyPolicies and on the
// Etcd strategies of their names (a strategy and its policy share their
// name, so a strategy's event names its policy's request).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&driverv1alpha1.StrategyPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&strategyv1alpha1.Etcd{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("strategypolicy").
		Complete(r)
}
