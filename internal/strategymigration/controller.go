package strategymigration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Reconciler moves each Etcd strategy's earlier fields to its
// StrategyPolicy, once:
//
//   - no StrategyPolicy of the strategy's name: it creates one with those
//     settings (Migrated True, SettingsMigrated) and says so in an Event
//     on the strategy;
//   - one that says the same: it notes that the fields were read
//     (Migrated True, SettingsAgree);
//   - one that says something else: it changes nothing, and says so on the
//     StrategyPolicy (Migrated False, MigrationConflict, naming both) and
//     in a Warning Event on the strategy. The StrategyPolicy applies, as it
//     does everywhere; the strategy's field is only read again, until the
//     two agree or the admin removes the field from the strategy.
//
// A StrategyPolicy read or created this way carries the strategy's UID
// (driverv1alpha1.MigratedFromAnnotation), and that strategy's fields are
// not read again. On Cozystack's strategy CRD the fields are pruned and
// there is nothing to move.
type Reconciler struct {
	// Client reads StrategyPolicies from the cache and writes them.
	Client client.Client
	// APIReader reads a strategy as stored, unstructured: the typed
	// strategy (and so the cache) has none of the earlier fields.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
}

// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies/status,verbs=get;patch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads one strategy's earlier fields and moves them, or says why
// not.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(strategyv1alpha1.GroupVersion.WithKind("Etcd"))
	if err := r.APIReader.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sp := &driverv1alpha1.StrategyPolicy{}
	err := r.Client.Get(ctx, req.NamespacedName, sp)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read StrategyPolicy %q: %w", req.Name, err)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	l, err := Read(u.GetName(), spec)
	if err != nil {
		// Nothing is moved from what cannot be read; the admin sees why.
		// (Reconciles follow the strategy's generation, so this is said
		// once per change.)
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, driverv1alpha1.StrategyPolicyReasonMigrationConflict, "Migrate",
			"%s", textlimit.Note(err.Error()+"; nothing was moved: set the StrategyPolicy by hand"))
		return ctrl.Result{}, nil
	}
	switch {
	case found && sp.Annotations[driverv1alpha1.MigratedFromAnnotation] == string(u.GetUID()):
		// Read once already. A condition the create could not write yet
		// is written now (its Event was written with the create).
		if meta.FindStatusCondition(sp.Status.Conditions, driverv1alpha1.StrategyPolicyConditionMigrated) == nil {
			return ctrl.Result{}, r.setCondition(ctx, sp, nil, migrated(u.GetName(), l))
		}
		return ctrl.Result{}, nil
	case !found && l.Empty():
		return ctrl.Result{}, nil
	case !found:
		return ctrl.Result{}, r.create(ctx, u, l)
	}
	if c := l.Conflicts(sp); len(c) > 0 {
		return ctrl.Result{}, r.setCondition(ctx, sp, u, metav1.Condition{
			Status: metav1.ConditionFalse, Reason: driverv1alpha1.StrategyPolicyReasonMigrationConflict,
			Message: textlimit.Message(fmt.Sprintf("Etcd strategy %q holds settings in fields of the driver's earlier strategy CRD that this StrategyPolicy says otherwise: %s. "+
				"Nothing was changed and the StrategyPolicy applies; make the two agree, or remove the fields from the strategy", u.GetName(), Disagreements(c))),
		})
	}
	if l.Empty() && meta.FindStatusCondition(sp.Status.Conditions, driverv1alpha1.StrategyPolicyConditionMigrated) == nil {
		return ctrl.Result{}, nil // never held any: nothing to say
	}
	msg := fmt.Sprintf("Etcd strategy %q holds no setting in fields of the driver's earlier strategy CRD any more", u.GetName())
	if !l.Empty() {
		msg = fmt.Sprintf("this StrategyPolicy says what the fields of the driver's earlier strategy CRD on Etcd strategy %q say: %s; those fields are no longer read",
			u.GetName(), Said(l.Settings))
	}
	if err := r.setCondition(ctx, sp, u, metav1.Condition{Status: metav1.ConditionTrue,
		Reason: driverv1alpha1.StrategyPolicyReasonSettingsAgree, Message: textlimit.Message(msg)}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.mark(ctx, sp, u)
}

// migrated is the condition of a policy created from l.
func migrated(name string, l Legacy) metav1.Condition {
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: driverv1alpha1.StrategyPolicyReasonSettingsMigrated,
		Message: textlimit.Message(fmt.Sprintf("created by the driver from the fields of the driver's earlier strategy CRD on Etcd strategy %q: %s; those fields are no longer read",
			name, Said(l.Settings)))}
}

// create makes the strategy's StrategyPolicy from its earlier fields,
// marked as read, and says so.
func (r *Reconciler) create(ctx context.Context, u *unstructured.Unstructured, l Legacy) error {
	sp := &driverv1alpha1.StrategyPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Annotations: map[string]string{driverv1alpha1.MigratedFromAnnotation: string(u.GetUID())}},
		Spec:       *l.Spec.DeepCopy(),
	}
	if err := r.Client.Create(ctx, sp); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("StrategyPolicy %q appeared meanwhile; reading it again: %w", u.GetName(), err)
		}
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, driverv1alpha1.StrategyPolicyReasonMigrationConflict, "Migrate",
			"%s", textlimit.Note(fmt.Sprintf("could not create StrategyPolicy %q from the fields of the driver's earlier strategy CRD (%s): %v", u.GetName(), Said(l.Settings), err)))
		return fmt.Errorf("create StrategyPolicy %q from the strategy's earlier fields: %w", u.GetName(), err)
	}
	c := migrated(u.GetName(), l)
	log.FromContext(ctx).Info("created a StrategyPolicy from the strategy's earlier fields", "moved", len(l.Settings))
	r.Recorder.Eventf(u, sp, corev1.EventTypeNormal, c.Reason, "Migrate", "%s", textlimit.Note(c.Message))
	return r.setCondition(ctx, sp, nil, c)
}

// setCondition writes c as sp's Migrated condition when it says something
// new, and an Event on the strategy u (when given) when its status or
// reason changed.
func (r *Reconciler) setCondition(ctx context.Context, sp *driverv1alpha1.StrategyPolicy, u *unstructured.Unstructured, c metav1.Condition) error {
	c.Type, c.ObservedGeneration = driverv1alpha1.StrategyPolicyConditionMigrated, sp.Generation
	was := meta.FindStatusCondition(sp.Status.Conditions, c.Type)
	if was != nil && was.Status == c.Status && was.Reason == c.Reason && was.Message == c.Message && was.ObservedGeneration == c.ObservedGeneration {
		return nil
	}
	changed := was == nil || was.Status != c.Status || was.Reason != c.Reason
	patch := client.MergeFromWithOptions(sp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&sp.Status.Conditions, c)
	if err := r.Client.Status().Patch(ctx, sp, patch); err != nil {
		return fmt.Errorf("write the %s condition of StrategyPolicy %s: %w", c.Type, sp.Name, err)
	}
	if changed && u != nil {
		kind := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(u, sp, kind, c.Reason, "Migrate", "%s", textlimit.Note(c.Message))
	}
	return nil
}

// mark records on sp that u's earlier fields were read.
func (r *Reconciler) mark(ctx context.Context, sp *driverv1alpha1.StrategyPolicy, u *unstructured.Unstructured) error {
	patch := client.MergeFromWithOptions(sp.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if sp.Annotations == nil {
		sp.Annotations = map[string]string{}
	}
	sp.Annotations[driverv1alpha1.MigratedFromAnnotation] = string(u.GetUID())
	if err := r.Client.Patch(ctx, sp, patch); err != nil {
		return fmt.Errorf("note on StrategyPolicy %s that the strategy's earlier fields were read: %w", sp.Name, err)
	}
	return nil
}

// SetupWithManager registers the reconciler on Etcd strategies and on the
// StrategyPolicies of their names (a policy's event names its strategy's
// request).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&strategyv1alpha1.Etcd{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&driverv1alpha1.StrategyPolicy{}, &handler.EnqueueRequestForObject{}).
		Named("strategymigration").
		Complete(r)
}
