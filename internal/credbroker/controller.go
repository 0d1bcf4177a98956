package credbroker

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
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
// removes them when the strategy or its StrategyPolicy is deleted. Both
// hold its finalizer while the strategy brokers keys: the policy has the
// broker's settings, the strategy the endpoint and bucket, and neither may
// go before the keys they reach are removed. Deleting the StrategyPolicy
// is how an admin stops brokering (CEL refuses removing credentialBroker
// from it): the strategy's Backups then use its credentialsSecretRef.
type Reconciler struct {
	Client   client.Client
	Broker   *Broker
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies/finalizers,verbs=update
// The tenant key Secrets (get, create, update, delete by name, never list)
// and the Namespace list are granted by the chart only when
// credentialBroker.enabled is set: templates/rbac.yaml.

// Reconcile sweeps one strategy's keys, or removes them all when the
// strategy or its StrategyPolicy goes. A request names both: they share
// their name.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s, sp, err := r.read(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	strategy := strategypolicy.Strategy{Etcd: s, Policy: strategypolicy.Effective(req.Name, sp)}
	var going []client.Object
	if s != nil && !s.DeletionTimestamp.IsZero() {
		going = append(going, s)
	}
	if sp != nil && !sp.DeletionTimestamp.IsZero() {
		going = append(going, sp)
	}
	if len(going) > 0 {
		return ctrl.Result{}, r.release(ctx, strategy, going)
	}
	if !Brokered(strategy) {
		// Not (or no longer) brokered: nothing holds the strategy.
		if s != nil && controllerutil.RemoveFinalizer(s, Finalizer) {
			return ctrl.Result{}, r.Client.Update(ctx, s)
		}
		return ctrl.Result{}, nil
	}
	for _, o := range []client.Object{s, sp} {
		if controllerutil.AddFinalizer(o, Finalizer) {
			if err := r.Client.Update(ctx, o); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if err := strategy.Check(); err != nil {
		// Keys are not re-scoped to what a template renders; the
		// StrategyPolicy's Valid condition says the same, and a change
		// of either object brings the strategy back here.
		r.warn(s, "tenant keys are neither issued nor rotated: %v", err)
		return ctrl.Result{}, nil
	}
	next, err := r.Broker.Sweep(ctx, strategy)
	if err != nil {
		r.warn(s, "tenant key sweep failed: %v", err)
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("swept tenant keys", "next", next)
	return ctrl.Result{RequeueAfter: next + time.Second}, nil
}

// read returns the strategy and the StrategyPolicy named name, each nil
// when it does not exist.
func (r *Reconciler) read(ctx context.Context, name string) (*strategyv1alpha1.Etcd, *driverv1alpha1.StrategyPolicy, error) {
	s, sp := &strategyv1alpha1.Etcd{}, &driverv1alpha1.StrategyPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, s); apierrors.IsNotFound(err) {
		s = nil
	} else if err != nil {
		return nil, nil, err
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, sp); apierrors.IsNotFound(err) {
		sp = nil
	} else if err != nil {
		return nil, nil, err
	}
	return s, sp, nil
}

// release removes the tenant keys of a strategy whose strategy or
// StrategyPolicy (going) is being deleted, then lets go of those of the
// two that hold the finalizer.
func (r *Reconciler) release(ctx context.Context, strategy strategypolicy.Strategy, going []client.Object) error {
	var held []client.Object
	for _, o := range going {
		if controllerutil.ContainsFinalizer(o, Finalizer) {
			held = append(held, o)
		}
	}
	if len(held) == 0 {
		return nil
	}
	if Brokered(strategy) {
		if err := r.Broker.Remove(ctx, strategy); err != nil {
			r.warn(held[0], "cannot remove the tenant keys of the deleted strategy or StrategyPolicy: %v", err)
			return err
		}
	}
	forgetStrategy(strategy.Name)
	for _, o := range held {
		controllerutil.RemoveFinalizer(o, Finalizer)
		if err := r.Client.Update(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) warn(o client.Object, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(o, nil, corev1.EventTypeWarning, ReasonBrokerFailed, "Sweep", "%s", textlimit.Message(fmt.Sprintf(format, args...)))
	}
}

// SetupWithManager registers the reconciler on the strategies and their
// StrategyPolicies. It sweeps at start, on its own schedule (the
// RequeueAfter each sweep returns), when a strategy's or a policy's spec
// changes and when one is being deleted; not on metadata or status writes
// (its own finalizer, the shared-credentials and Valid conditions), which
// change nothing a sweep reads.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
	changed := builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting))
	return ctrl.NewControllerManagedBy(mgr).
		For(&strategyv1alpha1.Etcd{}, changed).
		// A policy names the strategy of its name.
		Watches(&driverv1alpha1.StrategyPolicy{}, &handler.EnqueueRequestForObject{}, changed).
		Named("credbroker").
		Complete(r)
}
