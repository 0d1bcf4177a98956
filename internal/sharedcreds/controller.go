package sharedcreds

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// ReadsPerSecond bounds the Secret reads (each with a read of its namespace)
// the controller makes: a resync of 10,000 namespaces takes about eight
// minutes and never crowds out the backups' own requests.
const ReadsPerSecond = 20

// batch is how many namespaces one reconcile reads before it yields.
const batch = 100

// DefaultResyncInterval is how often each strategy's namespaces are
// rediscovered and their Secrets read again.
const DefaultResyncInterval = time.Hour

// Reconciler keeps each Etcd strategy's SharedCredentials condition and the
// shared-credentials metric up to date.
type Reconciler struct {
	// Client reads strategies and Backups from the cache and patches the
	// strategies' status.
	client.Client
	// APIReader reads Secrets and Namespaces live, one by name.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Tracker   *Tracker
	// ResyncInterval is how often every namespace is read again;
	// DefaultResyncInterval when zero.
	ResyncInterval time.Duration
}

// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one strategy's knowledge up to date: rediscover its
// namespaces when a resync is due, read the Secrets of a batch of namespaces
// not read since, publish the metric, and write the condition when what it
// says changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s strategyv1alpha1.Etcd
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			r.Tracker.Forget(req.Name)
			sharedNamespaces.DeleteLabelValues(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	due, next := r.Tracker.resyncDue(s.Name, r.ResyncInterval)
	if due {
		found, err := r.discover(ctx, s.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		r.Tracker.resync(s.Name, found)
	}
	todo, more := r.Tracker.dirty(s.Name, batch)
	readErr := r.read(ctx, s.Name, todo)
	rep := r.Tracker.report(s.Name)
	sharedNamespaces.WithLabelValues(s.Name).Set(float64(len(rep.Sharing)))
	if readErr != nil {
		return ctrl.Result{}, readErr
	}
	if more {
		// Pace the reads: the next batch after the time this one was
		// allowed.
		return ctrl.Result{RequeueAfter: time.Second * batch / ReadsPerSecond}, nil
	}
	if rep.Pending == 0 {
		if err := r.publish(ctx, &s, rep); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(r.Tracker.clock.Now()), time.Second)}, nil
}

// read reads each target's Secret and records its digest, or drops the
// namespace when it or its key is gone. A transient error leaves the
// namespace to be read again and is returned (after the other reads).
func (r *Reconciler) read(ctx context.Context, strategy string, todo []target) error {
	var errs []error
	for _, tg := range todo {
		creds, err := s3object.ReadCredentials(ctx, r.APIReader, tg.namespace, tg.secret)
		switch {
		case errors.Is(err, s3object.ErrCredentials):
			// No key to share (the error names the keys, never a value).
			r.Tracker.drop(strategy, tg)
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		gone, err := r.namespaceGone(ctx, tg.namespace)
		switch {
		case err != nil:
			errs = append(errs, err)
		case gone:
			r.Tracker.drop(strategy, tg)
		default:
			r.Tracker.record(strategy, tg, creds.AccessKeyID)
		}
	}
	return errors.Join(errs...)
}

// namespaceGone reports whether ns no longer exists or is being deleted.
func (r *Reconciler) namespaceGone(ctx context.Context, ns string) (bool, error) {
	var n corev1.Namespace
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	return n.DeletionTimestamp != nil || n.Status.Phase == corev1.NamespaceTerminating, nil
}

// publish writes the condition rep calls for when its status, reason or
// message would change, or the spec did; nothing otherwise. An Event goes
// with each True and with the first False after a True.
func (r *Reconciler) publish(ctx context.Context, s *strategyv1alpha1.Etcd, rep Report) error {
	want := rep.Condition(s.Generation)
	var was *metav1.Condition
	if c := meta.FindStatusCondition(s.Status.Conditions, want.Type); c != nil {
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message && c.ObservedGeneration == want.ObservedGeneration {
			return nil
		}
		was = c.DeepCopy() // SetStatusCondition changes c in place
	}
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&s.Status.Conditions, want)
	if err := r.Status().Patch(ctx, s, patch); err != nil {
		return fmt.Errorf("write the %s condition of Etcd strategy %s: %w", want.Type, s.Name, err)
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case want.Status == metav1.ConditionTrue:
		log.Info("namespaces share an S3 access key", "strategy", s.Name, "sharing", len(rep.Sharing), "keys", rep.SharedKeys)
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, want.Reason, "CheckCredentials", "%s", want.Message)
	case was != nil && was.Status == metav1.ConditionTrue:
		log.Info("no namespaces share an S3 access key any more", "strategy", s.Name)
		r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, want.Reason, "CheckCredentials", "%s", want.Message)
	}
	return nil
}
