package inspection

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "backup-inspection"

// DefaultDeadline bounds one inspection Job.
const DefaultDeadline = 30 * time.Minute

// Reconciler inspects one Etcd Backup at a time.
type Reconciler struct {
	// Client reads Backups and the driver's Jobs through the cache and
	// writes them.
	Client client.Client
	// APIReader reads Pods (not cached) and strategies.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Keys verify Backups and sign manifests.
	Keys provenance.Keys
	// Policy decides which endpoints the Job may dial.
	Policy endpointpolicy.Policy
	// Image is the driver's image (the Job runs its /etcd-stage).
	Image string
	// AllowedEndpointCIDRs and S3CAPEM are handed to the Job as to the
	// restore's staging Job.
	AllowedEndpointCIDRs []string
	S3CAPEM              string
	// Deadline bounds a Job; zero means DefaultDeadline.
	Deadline time.Duration
	// MaxJobs bounds the inspection Jobs running at once (an upgrade
	// finds every existing Backup uninspected); below 1 means 1.
	MaxJobs int
	// MaxJobsPerNamespace bounds those of one namespace; 0 means no
	// bound.
	MaxJobsPerNamespace int
	Clock               clock.PassiveClock

	// legacy remembers the Backups already read for the records of the
	// earlier Backup CRD (migrate.go); SetupWithManager makes it, without
	// it every reconcile reads them.
	legacy *legacyChecked
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one Backup's inspection a step. A write that lost the
// optimistic lock is decided again on the newer Backup without a
// reconcile error: right after the driver's own InspectionPending write
// the new Job's event often comes before the Backup's, and the cache is a
// moment behind (in `make bench` half the inspections met it).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("the Backup changed since it was read; deciding again", "reason", err.Error())
		return ctrl.Result{Requeue: true}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b backupsv1alpha1.Backup
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !backupdeletion.IsEtcdBackup(&b) || b.DeletionTimestamp != nil || b.Status.Phase != backupsv1alpha1.BackupPhaseReady {
		return ctrl.Result{}, nil
	}
	verdict, err := provenance.Verify(ctx, r.Keys, &b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !verdict.Verified {
		return ctrl.Result{}, r.refuse(ctx, &b, backupsv1alpha1.BackupReasonInspectionRefused,
			"the Backup is not verified ("+verdict.Reason+"): the driver inspects only Backups it recorded")
	}
	if moved, err := r.migrate(ctx, &b); err != nil || moved {
		return ctrl.Result{Requeue: moved}, err
	}
	if artifact.Manifest(&b) != nil {
		ok, err := provenance.VerifyManifest(ctx, r.Keys, &b)
		if err != nil {
			return ctrl.Result{}, err
		}
		if ok {
			return ctrl.Result{}, nil
		}
		log.FromContext(ctx).Info("the Backup's manifest does not verify (edited, or copied from another Backup); inspecting again")
	}
	policy, err := strategypolicy.Of(ctx, r.Client, b.Spec.StrategyRef.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if policy.Inspection.Disabled {
		return ctrl.Result{}, r.setInspected(ctx, &b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionDisabled,
			"the StrategyPolicy "+policy.Name+" disables inspection (spec.inspection.disabled): no manifest and no content-drop guard")
	}
	return r.inspect(ctx, &b, policy)
}

// refuse records a terminal refusal once, with a Warning Event.
func (r *Reconciler) refuse(ctx context.Context, b *backupsv1alpha1.Backup, reason, msg string) error {
	c := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected)
	if c != nil && c.Reason == reason && c.Message == textlimit.Message(msg) {
		return nil
	}
	log.FromContext(ctx).Info("Backup not inspected", "reason", reason, "message", msg)
	r.Recorder.Eventf(b, nil, "Warning", reason, "Inspect", "%s", textlimit.Note(msg))
	inspectionsTotal.WithLabelValues(reason).Inc()
	return r.setInspected(ctx, b, metav1.ConditionFalse, reason, msg)
}

// setInspected writes the Inspected condition when it changes. Backup has
// no status subresource: this is a patch of the object, with the
// optimistic lock, so a stale copy never drops another controller's
// condition.
func (r *Reconciler) setInspected(ctx context.Context, b *backupsv1alpha1.Backup, status metav1.ConditionStatus, reason, msg string) error {
	before := b.DeepCopy()
	if !meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
		Type: backupsv1alpha1.BackupConditionInspected, Status: status, Reason: reason, Message: textlimit.Message(msg),
	}) {
		return nil
	}
	return r.patch(ctx, before, b)
}

func (r *Reconciler) patch(ctx context.Context, before, b *backupsv1alpha1.Backup) error {
	err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *Reconciler) deadline() time.Duration {
	if r.Deadline > 0 {
		return r.Deadline
	}
	return DefaultDeadline
}
