package operator

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// snapshotReconciler plays the operator's EtcdSnapshot controller
// (controllers/etcdsnapshot_controller.go upstream): Pending on first
// sight, then a real batch/v1 Job <snapshot>-snapshot owned by the snapshot
// (run by kube-controller-manager's Job controller, its Pod by the kubelet
// stand-in), Started while it runs, Failed when the Job fails, Complete
// with the artifact the agent reported once the Job has a succeeded Pod.
type snapshotReconciler struct {
	client client.Client
	reader client.Reader
	agents *SnapshotStatsStore
	// jobDeadline is the Jobs' activeDeadlineSeconds.
	jobDeadline time.Duration
}

func (r *snapshotReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-operator-snapshot").
		For(&etcdv1alpha2.EtcdSnapshot{}).
		Owns(&batchv1.Job{}).
		Complete(r)
}

// Reconcile takes one step of the snapshot's lifecycle.
func (r *snapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s etcdv1alpha2.EtcdSnapshot
	if err := r.client.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch s.Status.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete, etcdv1alpha2.SnapshotPhaseFailed:
		return ctrl.Result{}, nil // terminal phases are sticky
	case "":
		base := s.DeepCopy()
		s.Status.Phase = etcdv1alpha2.SnapshotPhasePending
		return ctrl.Result{}, r.client.Status().Patch(ctx, &s, client.MergeFrom(base))
	}

	var c etcdv1alpha2.EtcdCluster
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, &c); err != nil {
		if isNotFound(err) {
			return ctrl.Result{}, r.setPhase(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonClusterNotFound,
				fmt.Sprintf("EtcdCluster %q not found", s.Spec.ClusterRef.Name))
		}
		return ctrl.Result{}, err
	}

	var job batchv1.Job
	jobKey := client.ObjectKey{Namespace: s.Namespace, Name: snapshotJobName(&s)}
	err := r.client.Get(ctx, jobKey, &job)
	switch {
	case isNotFound(err):
		if s.Status.Phase == etcdv1alpha2.SnapshotPhaseStarted {
			// Gone after it was created: never run it twice. Confirm live
			// first, so cache lag is not mistaken for a lost Job.
			if lerr := r.reader.Get(ctx, jobKey, &batchv1.Job{}); lerr == nil {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			} else if !isNotFound(lerr) {
				return ctrl.Result{}, lerr
			}
			return ctrl.Result{}, r.setPhase(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonSnapshotJobLost,
				"snapshot Job completed or was removed before its snapshot could be recorded; not re-running to avoid a duplicate snapshot")
		}
		j := buildSnapshotJob(&s, &c, r.jobDeadline)
		if err := controllerutil.SetControllerReference(&s, j, r.client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.client.Create(ctx, j); client.IgnoreAlreadyExists(err) != nil {
			return ctrl.Result{}, fmt.Errorf("create snapshot Job %s: %w", j.Name, err)
		}
		return ctrl.Result{}, r.setPhase(ctx, &s, etcdv1alpha2.SnapshotPhaseStarted, reasonJobCreated, "snapshot job created")
	case err != nil:
		return ctrl.Result{}, err
	}

	if jobFailed(&job) {
		return ctrl.Result{}, r.setPhase(ctx, &s, etcdv1alpha2.SnapshotPhaseFailed, reasonJobFailed, "snapshot job failed")
	}
	if job.Status.Succeeded < 1 {
		return ctrl.Result{}, nil // the Job's updates wake us
	}
	art, ok, err := r.marker(ctx, &job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		// The operator retries reading the log marker every 5s.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, r.setPhase(ctx, &s, etcdv1alpha2.SnapshotPhaseComplete, reasonSnapshotStored, "snapshot captured and stored", &art)
}

// marker is what the operator parses from a succeeded Pod's log: here the
// agent's record, by Pod UID.
func (r *snapshotReconciler) marker(ctx context.Context, job *batchv1.Job) (etcdv1alpha2.SnapshotArtifact, bool, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, false, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		if res, ok := r.agents.result(p.UID); ok && res.err == nil {
			return res.artifact, true, nil
		}
	}
	return etcdv1alpha2.SnapshotArtifact{}, false, nil
}

// setPhase records the phase and the single Ready condition (True only when
// Complete), with the artifact when there is one.
func (r *snapshotReconciler) setPhase(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot, phase etcdv1alpha2.SnapshotPhase, reason, msg string, art ...*etcdv1alpha2.SnapshotArtifact) error {
	base := s.DeepCopy()
	s.Status.Phase = phase
	if len(art) > 0 {
		s.Status.Artifact = art[0]
	}
	status := metav1.ConditionFalse
	if phase == etcdv1alpha2.SnapshotPhaseComplete {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{
		Type: etcdv1alpha2.SnapshotConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.Generation,
	})
	return r.client.Status().Patch(ctx, s, client.MergeFrom(base))
}

func jobFailed(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
