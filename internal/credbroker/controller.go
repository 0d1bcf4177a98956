package credbroker

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Finalizer holds a brokered strategy until its tenant keys are removed.
const Finalizer = "etcd-backup-driver.cozystack.io/credential-broker"

// Reason of the Events the reconciler emits on a strategy.
const (
	// ReasonBrokerFailed: the broker could not reach the provider or the
	// admin Secret; it retries with backoff.
	ReasonBrokerFailed = "CredentialBrokerFailed"
)

// Reconciler sweeps each brokered strategy's tenant keys on schedule and
// removes them when the strategy is deleted.
type Reconciler struct {
	Client   client.Client
	Broker   *Broker
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds/finalizers,verbs=update
// The tenant key Secrets (get, create, update, delete by name, never list)
// and the Namespace list are granted by the chart only when
// credentialBroker.enabled is set: templates/rbac.yaml.

// Reconcile sweeps one strategy's keys, or removes them all when it goes.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s strategyv1alpha1.Etcd
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&s, Finalizer) {
			return ctrl.Result{}, nil
		}
		if Brokered(&s) {
			if err := r.Broker.Remove(ctx, &s); err != nil {
				r.warn(&s, "cannot remove the tenant keys of the deleted strategy: %v", err)
				return ctrl.Result{}, err
			}
		}
		forgetStrategy(s.Name)
		controllerutil.RemoveFinalizer(&s, Finalizer)
		return ctrl.Result{}, r.Client.Update(ctx, &s)
	}
	if !Brokered(&s) {
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&s, Finalizer) {
		if err := r.Client.Update(ctx, &s); err != nil {
			return ctrl.Result{}, err
		}
	}
	next, err := r.Broker.Sweep(ctx, &s)
	if err != nil {
		r.warn(&s, "tenant key sweep failed: %v", err)
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("swept tenant keys", "next", next)
	return ctrl.Result{RequeueAfter: next + time.Second}, nil
}

func (r *Reconciler) warn(s *strategyv1alpha1.Etcd, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, ReasonBrokerFailed, "Sweep", "%s", textlimit.Message(fmt.Sprintf(format, args...)))
	}
}

// SetupWithManager registers the reconciler on the strategies. It sweeps
// at start, on its own schedule (the RequeueAfter each sweep returns), when
// a strategy's spec changes and when one is being deleted; not on metadata
// or status writes (its own finalizer, the shared-credentials condition),
// which change nothing a sweep reads.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
	return ctrl.NewControllerManagedBy(mgr).
		For(&strategyv1alpha1.Etcd{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting))).
		Named("credbroker").
		Complete(r)
}
