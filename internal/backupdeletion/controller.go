// Package backupdeletion looks after Etcd Backups for their whole life: it
// keeps the driver's cleanup finalizer on every Backup taken by the Etcd
// strategy and shows whether the driver can verify it; when such a Backup
// is deleted it removes the S3 object if the Backup is verified and its
// recorded deletion policy is Delete, always removes the Backup's own
// EtcdSnapshot, and then lets the Backup go. Backups of other strategies are
// left to their own drivers.
package backupdeletion

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "backup-deletion"

// LegacyFinalizer is the Cozystack core's old Velero finalizer. Etcd Backups
// have nothing for it to do, so it is removed with ours.
const LegacyFinalizer = "backups.cozystack.io/cleanup-velero"

// SkipObjectDeletionAnnotation, set to "true" on a Backup by an admin, makes
// deleting the Backup keep its S3 object even when the recorded deletion
// policy is Delete. It is the way out when the object cannot be deleted (the
// bucket or its credentials are gone for good); the EtcdSnapshot is still
// removed.
const SkipObjectDeletionAnnotation = "etcd-backup-driver.cozystack.io/skip-object-deletion"

// Reconciler handles one Etcd Backup at a time.
type Reconciler struct {
	// Client reads Backups through the cache and Secrets live (the manager
	// disables caching for Secrets).
	Client client.Client
	// APIReader reads EtcdSnapshots and RestoreJobs directly.
	APIReader client.Reader
	// Recorder emits Events on Backups.
	Recorder events.EventRecorder
	// Keys verify Backups: only a verified Backup's object is ever deleted.
	Keys provenance.Keys
	// Policy decides which endpoints may be dialled.
	Policy endpointpolicy.Policy
	// Objects deletes snapshot objects; nil means S3 through Policy.
	Objects ObjectDeleter
	// Broker hands out the platform credential for brokered strategies'
	// objects; nil reads every recorded Secret.
	Broker DeletionKeys
	// Clock times the chain's last listing (chainSettle); nil is the
	// real clock.
	Clock clock.PassiveClock
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=captureprogresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile keeps the finalizer and the Verified condition on a live Etcd
// Backup, and on a deleted one removes the stored object (verified, by
// policy) and the EtcdSnapshot before releasing it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b backupsv1alpha1.Backup
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ours(&b) {
		return ctrl.Result{}, nil
	}
	verdict, err := provenance.Verify(ctx, r.Keys, &b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if b.DeletionTimestamp == nil {
		if err := r.ensureFinalizer(ctx, &b); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.showVerdict(ctx, &b, verdict)
	}
	if !holdsAnyFinalizer(&b) {
		return ctrl.Result{}, nil
	}

	if waiting, err := r.waitForRestores(ctx, &b, verdict); err != nil || waiting {
		return ctrl.Result{}, err
	}
	outcome, err := r.deleteObject(ctx, &b, verdict)
	if s := (*settling)(nil); errors.As(err, &s) {
		log.FromContext(ctx).Info("deleted the chain; deleting the snapshot once a capture's last upload has landed", "after", s.after)
		return ctrl.Result{RequeueAfter: s.after}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.deleteSnapshot(ctx, &b); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.release(ctx, &b); err != nil {
		return ctrl.Result{}, err
	}
	deletedTotal.WithLabelValues(string(outcome.policy), outcome.object).Inc()
	log.FromContext(ctx).Info("cleaned up deleted Backup", "policy", outcome.policy, "object", outcome.object, "verified", verdict.Verified)
	return ctrl.Result{}, nil
}

// IsEtcdBackup reports whether b was taken by the Etcd strategy.
func IsEtcdBackup(b *backupsv1alpha1.Backup) bool {
	return strategyv1alpha1.IsEtcd(b.Spec.StrategyRef)
}

// ours: b was taken by the Etcd strategy, or carries the driver's
// finalizer. strategyRef is tenant-writable and unsigned: a Backup whose
// strategyRef was changed after the driver put its finalizer on is still
// cleaned up and released by the driver, never stranded.
func ours(b *backupsv1alpha1.Backup) bool {
	return IsEtcdBackup(b) || controllerutil.ContainsFinalizer(b, backupsv1alpha1.BackupCleanupFinalizer)
}

func holdsAnyFinalizer(b *backupsv1alpha1.Backup) bool {
	for _, f := range []string{backupsv1alpha1.BackupCleanupFinalizer, backupsv1alpha1.CleanupFinalizer, LegacyFinalizer} {
		if controllerutil.ContainsFinalizer(b, f) {
			return true
		}
	}
	return false
}

func (r *Reconciler) ensureFinalizer(ctx context.Context, b *backupsv1alpha1.Backup) error {
	if controllerutil.ContainsFinalizer(b, backupsv1alpha1.BackupCleanupFinalizer) {
		return nil
	}
	before := b.DeepCopy()
	controllerutil.AddFinalizer(b, backupsv1alpha1.BackupCleanupFinalizer)
	// Optimistic lock: a merge patch replaces the whole finalizer list.
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("add finalizer to Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// release removes the driver's finalizer, and the shared and legacy ones
// that earlier releases relied on, letting the API server delete the
// Backup.
func (r *Reconciler) release(ctx context.Context, b *backupsv1alpha1.Backup) error {
	before := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, backupsv1alpha1.BackupCleanupFinalizer)
	controllerutil.RemoveFinalizer(b, backupsv1alpha1.CleanupFinalizer)
	controllerutil.RemoveFinalizer(b, LegacyFinalizer)
	err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizers from Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller for Etcd Backups only.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	etcdOnly := predicate.NewPredicateFuncs(func(o client.Object) bool {
		b, ok := o.(*backupsv1alpha1.Backup)
		return ok && ours(b)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&backupsv1alpha1.Backup{}, builder.WithPredicates(etcdOnly)).
		Watches(&backupsv1alpha1.RestoreJob{}, handler.EnqueueRequestsFromMapFunc(backupOfRestore)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}
