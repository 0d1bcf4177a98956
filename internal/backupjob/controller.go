// Package backupjob is the Etcd strategy's BackupJob controller: it turns each
// BackupJob whose BackupClass binds the Etcd strategy into exactly one
// EtcdSnapshot, follows that snapshot by watching it, and records a Backup
// when it completes. Jobs for other strategies are never touched.
package backupjob

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// Reconciler reconciles BackupJobs for the Etcd strategy.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache, for the rare reads that must be live
	// (an object the cache has not seen yet after AlreadyExists).
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// Deadline bounds how long a job may wait for its preconditions. A
	// snapshot that started is followed to its end past it, so no snapshot
	// object is ever left without a Backup.
	Deadline time.Duration
	// Keys sign the Backups the job records.
	Keys provenance.Keys
	// Policy decides which endpoints a strategy may render.
	Policy endpointpolicy.Policy
	// Claims are the restore claims (live reads), in the driver's namespace.
	Claims claim.Store
	// Credentials, when set, is told which credentials Secret each job's
	// namespace renders for its strategy (internal/sharedcreds: shared-key
	// detection). It must not block.
	Credentials interface {
		Observe(strategy, namespace, secret string)
	}
	// Broker issues tenant keys for brokered strategies; nil fails their
	// jobs.
	Broker CredentialBroker
	// MaxSnapshotsPerCluster bounds the snapshots of one EtcdCluster that
	// run at once (whoever started them); a job beyond it waits, Pending
	// WaitingForSnapshotSlot. 0 means no bound.
	MaxSnapshotsPerCluster int

	slots slotBook
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch,resourceNames=etcd
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch,namespace=etcd-backup-driver
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile takes one step for one BackupJob.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job backupsv1alpha1.BackupJob
	if err := r.Get(ctx, req.NamespacedName, &job); apierrors.IsNotFound(err) {
		// Deleted: a snapshot it left running is still recorded.
		return r.recordLeftSnapshots(ctx, req)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if job.Status.Phase.IsTerminal() {
		return requeueOnConflict(r.releaseJob(ctx, &job))
	}

	// A snapshot with this job's deterministic name means the job is ours
	// and past its preconditions: follow it.
	snap, out := r.ownSnapshot(ctx, &job)
	if out != nil {
		return r.apply(ctx, &job, *out)
	}
	if snap != nil {
		if job.DeletionTimestamp != nil && r.pastDeadline(&job) {
			// A deleted job waits for its snapshot only until the
			// deadline: the operator may never finish it.
			return requeueOnConflict(r.releaseJob(ctx, &job))
		}
		return r.apply(ctx, &job, r.follow(ctx, &job, snap))
	}

	if job.DeletionTimestamp != nil {
		// Deleted before its snapshot started: start nothing.
		return requeueOnConflict(r.releaseJob(ctx, &job))
	}
	p, out, err := r.prepare(ctx, &job)
	if errors.Is(err, errNotOurs) {
		log.FromContext(ctx).V(1).Info("BackupJob belongs to another strategy; leaving it alone")
		return ctrl.Result{}, nil
	}
	if out != nil {
		return r.held(ctx, &job, *out)
	}
	if r.pastDeadline(&job) {
		// Never start a snapshot for a job that is already out of time;
		// once one has started it is followed to its end.
		return r.held(ctx, &job, failed(backupsv1alpha1.BackupReasonDeadlineExceeded,
			"the backup deadline of %s passed before the snapshot could start", r.Deadline))
	}

	// From the slot check to the snapshot's creation, no other job of
	// the namespace decides (the bound holds against concurrent reconciles).
	release := r.slots.lock(job.Namespace)
	defer release()
	if out, err := r.snapshotSlot(ctx, &job); err != nil {
		return ctrl.Result{}, err
	} else if out != nil {
		return r.held(ctx, &job, *out)
	}
	// Booked before the create, so that the snapshot's end, which can
	// only come after it, always finds the booking to clear.
	r.slots.started(job.Namespace, SnapshotName(&job), r.Clock.Now())
	snap, out = r.createSnapshot(ctx, &job, p)
	if out != nil || snap.Ended() {
		// Not created, or it existed and has ended (history the cache
		// no longer shows, met by a reconcile of a stale copy of the
		// job): no end event will come to clear the booking.
		r.slots.ended(job.Namespace, SnapshotName(&job))
	}
	if out != nil {
		return r.apply(ctx, &job, *out)
	}
	return r.apply(ctx, &job, r.follow(ctx, &job, snap))
}
