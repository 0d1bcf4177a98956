// Package restore is the Etcd driver's in-place restore: a RestoreJob whose
// Backup was taken by the Etcd strategy claims its application, takes a
// safety snapshot, captures the live EtcdCluster, suspends the HelmRelease,
// replaces the cluster with one bootstrapped from the Backup's exact S3
// object, and hands the application back. Every step is chosen afresh from
// the observed world, so a crash between any two writes is survived.
package restore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// maxStepsPerReconcile bounds the observe-decide-act loop of one reconcile;
// a restore needs about fifteen steps, most of them separated by waits.
const maxStepsPerReconcile = 32

// Reconciler drives RestoreJobs of the Etcd strategy.
type Reconciler struct {
	// Client writes; its reads are not used for decisions.
	Client client.Client
	// Reader reads live from the API server (the manager's API reader).
	Reader client.Reader
	// Recorder emits Events on RestoreJobs.
	Recorder events.EventRecorder
	// Deadline is the default restore deadline.
	Deadline time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile observes the world, decides one step, writes the status that
// step implies, takes it, and repeats until the restore has to wait.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	for range maxStepsPerReconcile {
		o, err := r.observe(ctx, req.NamespacedName)
		if err != nil || o == nil {
			return ctrl.Result{}, err
		}
		d := decide(o, r.Deadline)
		log.V(1).Info("restore step", "state", d.state, "reason", d.reason)
		if err := r.report(ctx, o, d); err != nil {
			return ctrl.Result{}, err
		}
		if d.state.waits() {
			return waitResult(o, d), nil
		}
		if err := r.act(ctx, o, d); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, fmt.Errorf("RestoreJob %s did not settle within %d steps", req.NamespacedName, maxStepsPerReconcile)
}

// report writes the status for d and, on a transition, an Event and metrics.
func (r *Reconciler) report(ctx context.Context, o *observation, d decision) error {
	prevReason := readyReason(o.job)
	finished, err := r.syncStatus(ctx, o, d)
	if err != nil {
		return err
	}
	if d.reason != "" && string(d.reason) != prevReason {
		r.event(o, d)
	}
	if finished {
		recordFinish(o.job)
		logr.FromContextOrDiscard(ctx).Info("restore finished", "phase", o.job.Status.Phase, "reason", d.reason, "message", d.message)
	}
	return nil
}

// waitResult wakes a waiting job at its deadline; watches wake it earlier.
func waitResult(o *observation, d decision) ctrl.Result {
	if d.deadline.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(d.deadline.Sub(o.now), time.Second)}
}

// act takes the one step of d.
func (r *Reconciler) act(ctx context.Context, o *observation, d decision) error {
	switch d.state {
	case stateAddFinalizer:
		return r.patchFinalizer(ctx, o.job, true)
	case stateAcquireClaim:
		if o.holder == nil {
			_, err := claim.Acquire(ctx, r.Client, o.job, o.app)
			return err
		}
		return nil
	case stateCreateSafetySnapshot:
		return r.createSafetySnapshot(ctx, o)
	case stateRecordSafetyBackup:
		return r.recordSafetyBackup(ctx, o)
	case stateHandOverSnapshot:
		return r.handOverSnapshot(ctx, o)
	case stateCapture:
		return r.captureCluster(ctx, o)
	case stateSuspendHelmRelease:
		return r.setSuspend(ctx, o.hr, true)
	case stateDeleteCluster:
		return r.deleteCluster(ctx, o)
	case stateRecreate:
		terminal, err := r.recreateCluster(ctx, o)
		if terminal {
			return r.failNow(ctx, o, backupsv1alpha1.ReasonRecreateRejected, err)
		}
		return err
	case stateRestoreHelmRelease:
		return r.setSuspend(ctx, o.hr, false)
	case stateReleaseClaim:
		return claim.Release(ctx, r.Client, o.job, o.app)
	case stateRemoveFinalizer:
		return r.patchFinalizer(ctx, o.job, false)
	case stateFail, stateSucceed:
		// The status write in report was the step.
		return nil
	}
	return fmt.Errorf("no step for state %s", d.state)
}

// failNow turns an error the API server will repeat into a terminal failure.
func (r *Reconciler) failNow(ctx context.Context, o *observation, reason backupsv1alpha1.RestoreReason, cause error) error {
	d := failure(o, reason, cause.Error())
	return r.report(ctx, o, d)
}

func (r *Reconciler) patchFinalizer(ctx context.Context, job *backupsv1alpha1.RestoreJob, add bool) error {
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if add {
		controllerutil.AddFinalizer(job, backupsv1alpha1.CleanupFinalizer)
	} else {
		controllerutil.RemoveFinalizer(job, backupsv1alpha1.CleanupFinalizer)
	}
	if err := r.Client.Patch(ctx, job, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update finalizer of RestoreJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

func readyReason(job *backupsv1alpha1.RestoreJob) string {
	for _, c := range job.Status.Conditions {
		if c.Type == backupsv1alpha1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}
