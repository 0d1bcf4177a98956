package operator

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// SnapshotReconciler plays the etcd-operator's EtcdSnapshot controller. The
// operator's snapshot Job is a goroutine here (see snapshotJobs); its result
// is read back like the Job's log marker.
type SnapshotReconciler struct {
	Client client.Client
	// APIReader reads Secrets live, as the kubelet would for the Job's Pod.
	APIReader client.Reader
	Fleet     *Fleet
	Now       func() time.Time

	jobs *snapshotJobs
}

// SetupWithManager registers the controller.
func (r *SnapshotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.jobs = newSnapshotJobs()
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-operator-snapshot").
		For(&etcdv1alpha2.EtcdSnapshot{}).
		WatchesRawSource(source.Channel(r.jobs.done, &handler.TypedEnqueueRequestForObject[*etcdv1alpha2.EtcdSnapshot]{})).
		Complete(r)
}

// Stats returns the timing of a finished snapshot job, by snapshot UID.
func (r *SnapshotReconciler) Stats(uid string) (SnapshotStats, bool) {
	res, ok := r.jobs.result(uid)
	if !ok || res == nil || res.err != nil {
		return SnapshotStats{}, false
	}
	return res.stats, true
}

// Reconcile moves a snapshot through Pending, Started and Complete/Failed.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s etcdv1alpha2.EtcdSnapshot
	if err := r.Client.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch s.Status.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete, etcdv1alpha2.SnapshotPhaseFailed:
		return ctrl.Result{}, nil // terminal phases are sticky
	case "":
		s.Status.Phase = etcdv1alpha2.SnapshotPhasePending
		return ctrl.Result{}, r.Client.Status().Update(ctx, &s)
	}

	var c etcdv1alpha2.EtcdCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonClusterNotFound, "EtcdCluster "+s.Spec.ClusterRef.Name+" not found")
		}
		return ctrl.Result{}, err
	}

	if s.Status.Phase == etcdv1alpha2.SnapshotPhasePending {
		r.jobs.start(&s, r.job(&s))
		return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseStarted, reasonJobCreated, "snapshot job "+s.Name+"-snapshot created")
	}

	res, known := r.jobs.result(string(s.UID))
	switch {
	case !known:
		return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonSnapshotJobLost, "snapshot job "+s.Name+"-snapshot disappeared while the snapshot was Started")
	case res == nil:
		if cond := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.SnapshotConditionReady); cond != nil && cond.Reason == reasonJobRunning {
			return ctrl.Result{}, nil
		}
		return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseStarted, reasonJobRunning, "snapshot job is running")
	case res.err != nil:
		return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonJobFailed, "snapshot job failed: "+res.err.Error())
	default:
		s.Status.Artifact = &res.artifact
		return r.finish(ctx, &s, etcdv1alpha2.SnapshotPhaseComplete, reasonSnapshotStored, "snapshot stored at "+res.artifact.URI)
	}
}

func (r *SnapshotReconciler) finish(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, phase etcdv1alpha2.SnapshotPhase, reason, msg string) (ctrl.Result, error) {
	s.Status.Phase = phase
	status := metav1.ConditionFalse
	if phase == etcdv1alpha2.SnapshotPhaseComplete {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
		Type: etcdv1alpha2.SnapshotConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.Generation,
	})
	return ctrl.Result{}, r.Client.Status().Update(ctx, s)
}

// snapshotDone is the event a finished job sends.
type snapshotDone = event.TypedGenericEvent[*etcdv1alpha2.EtcdSnapshot]
