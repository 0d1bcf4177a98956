package restore

import (
	"context"
	"encoding/json"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Every API write of a restore goes through this file or one it names:
// report (report.go) writes the status a decision implies, act takes the
// decision's one step (the writes of the safety snapshot and Backup are in
// safety_writes.go, those of the staging step and of the control-plane
// fence in staging.go and planes.go, through internal/stagingjob and
// internal/cpfence). Each write is
// idempotent or guarded (UID preconditions, optimistic locks, create that
// tolerates AlreadyExists), so repeating it after a crash is harmless.

// act takes the one step of d and reports whether it wrote anything.
func (r *Reconciler) act(ctx context.Context, o *observation, d decision) (bool, error) {
	switch d.state {
	case stateConclude, stateStartRollback, stateFinish, stateReportHelmRelease:
		// The status write in report was the step.
		return false, nil
	case stateAcquireClaim:
		if o.holder != nil {
			return false, nil
		}
	}
	b := beforeWrite(o)
	if err := r.step(ctx, o, d); err != nil {
		return true, err
	}
	if met := expectationOf(d.state, b); met != nil {
		r.expect.expect(o.job.UID, met, o.now)
	}
	return true, nil
}

// step is the write of d.
func (r *Reconciler) step(ctx context.Context, o *observation, d decision) error {
	switch d.state {
	case stateAddFinalizer:
		return r.patchFinalizer(ctx, o.job, true)
	case stateRemoveFinalizer:
		// The staging claim is settled first, and again after a crash
		// in between: the finalizer is the record that it is done, not
		// the staging Job (a finished one is left to its TTL). Without a
		// capture it was settled with the capture's removal, which knew
		// its names.
		if settles(o) && o.capture != nil {
			if err := r.settleStaging(ctx, o); err != nil {
				return err
			}
		}
		// The fence record goes once nothing it holds is fenced.
		if _, err := cpfence.DropRecord(ctx, r.Client, o.planes, o.job.UID); err != nil {
			return err
		}
		r.made.forget(o.job.UID)
		r.madeJob.forget(o.job.UID)
		r.madeCluster.forget(o.job.UID)
		r.creds.forget(o.job.UID)
		if r.reads != nil {
			r.reads.Forget(o.job.UID)
		}
		return r.patchFinalizer(ctx, o.job, false)
	case stateAcquireClaim:
		_, err := r.Claims.Acquire(ctx, o.job, o.target, o.app)
		return err
	case stateBreakStaleClaim:
		r.event(o, backupsv1alpha1.ReasonClaimBroken, d.message, true)
		return r.Claims.Release(ctx, o.target, o.holder)
	case stateReleaseClaim:
		return r.Claims.Release(ctx, o.target, o.holder)
	case stateVerifyArtifact:
		return r.verify(ctx, o)
	case stateCreateSafetySnapshot:
		return r.createSafetySnapshot(ctx, o)
	case stateRecordSafetyBackup:
		return r.recordSafetyBackup(ctx, o)
	case stateHandOverSnapshot:
		// The safety Backup is told by the SafetyBackup condition and
		// by the conclusion's Event (story.go), not an Event of its own.
		return r.handOverSnapshot(ctx, o)
	case stateAbandonSafetySnapshot:
		return r.abandonSafetySnapshot(ctx, o)
	case stateCapture:
		return r.captureCluster(ctx, o)
	case statePinBase:
		return r.pinBase(ctx, o, d)
	case stateSuspendHelmRelease:
		return r.setSuspend(ctx, o.hr, true)
	case stateCarrySeal:
		return r.seal(ctx, o, sealedRecreated(o))
	case stateRestoreHelmRelease:
		// A sealed success is in the capture, which Flux does not touch
		// (an earlier driver's seal was carried there first).
		if err := r.setSuspend(ctx, o.hr, false); err != nil {
			return err
		}
		r.resumes.add(o.job.UID, o.now)
		return nil
	case stateDeleteCluster:
		return r.deleteCluster(ctx, o)
	case stateRecreate:
		return r.recreateCluster(ctx, o, d)
	case stateDeleteCapture:
		// The capture holds the staging's names: the staging is settled
		// before it goes.
		if settles(o) {
			if err := r.settleStaging(ctx, o); err != nil {
				return err
			}
		}
		return r.deleteCapture(ctx, o)
	case stateFence:
		return r.fence(ctx, o)
	case stateStage:
		return r.stage(ctx, o)
	case stateReadRevision:
		if r.reads == nil {
			return fmt.Errorf("no live-revision reads: SetupWithManager was not called")
		}
		r.reads.Start(liverevision.Key{Job: o.job.UID, Purpose: d.purpose}, client.ObjectKeyFromObject(o.job), o.job.Namespace)
		return nil
	case stateRestartControlPlanes:
		return r.restartPlanes(ctx, o)
	case stateLiftFence:
		return r.liftFence(ctx, o)
	case stateRestoreProgressDeadline:
		return r.restoreProgressDeadline(ctx, o)
	}
	return fmt.Errorf("no step for state %s", d.state)
}

func (r *Reconciler) patchFinalizer(ctx context.Context, job *backupsv1alpha1.RestoreJob, add bool) error {
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if add {
		controllerutil.AddFinalizer(job, backupsv1alpha1.RestoreFinalizer)
	} else {
		controllerutil.RemoveFinalizer(job, backupsv1alpha1.RestoreFinalizer)
	}
	if err := r.Client.Patch(ctx, job, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update finalizer of RestoreJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// verify looks at the snapshot and records what it found, tied to exactly
// what was checked.
func (r *Reconciler) verify(ctx context.Context, o *observation) error {
	v, err := r.verifyArtifact(ctx, o)
	if err != nil {
		if o.job.Status.StartedAt == nil {
			// A quiet check that could not be made: its status is written
			// now, so the user sees why the restore waits and its
			// deadline (counted from StartedAt) runs.
			d, _ := decideVerification(o)
			d.message += "; retrying: " + err.Error()
			if werr := r.writeStatus(ctx, o, d); werr != nil {
				return werr
			}
		}
		return err
	}
	cond := metav1.Condition{Type: backupsv1alpha1.RestoreConditionArtifactVerified, Status: metav1.ConditionTrue,
		Reason: string(backupsv1alpha1.ReasonArtifactVerified)}
	if !v.ok {
		cond.Status, cond.Reason = metav1.ConditionFalse, string(v.reason)
	}
	cond.Message = textlimit.Message(v.message) + " [" + fingerprint(o) + "]"
	before := o.job.DeepCopy()
	setConditionRaw(&o.job.Status, cond)
	if v.ok {
		// The check changes nothing but this condition, so the decision
		// that follows it is known now: its status (the safety
		// snapshot's, as a rule) goes with this write, and the next
		// reconcile takes that step without a status write of its own.
		if next := decide(o, r.Deadline); carriedAhead(next) {
			o.job.Status = desiredStatus(o, next)
		}
	}
	if err := r.Client.Status().Patch(ctx, o.job, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("record the artifact check on RestoreJob %s/%s: %w", o.job.Namespace, o.job.Name, err)
	}
	return nil
}

// captureCluster saves the live cluster, the HelmRelease's state and the
// sources of the re-create (and of a rollback) in the driver's namespace.
// An existing capture of this job is never overwritten: after the purge the
// live cluster is no longer the one to keep.
func (r *Reconciler) captureCluster(ctx context.Context, o *observation) error {
	// The cluster is captured from the API server, not the cache: the
	// whole object, unknown fields included. The HelmRelease's state comes
	// from the view this step was decided on, which is caught up with the
	// driver's own writes. A live read would not close the race with a
	// human who edits it at the same moment either; it only narrowed it
	// by the watch's latency.
	live, err := r.liveModel(ctx, o)
	if err != nil {
		return err
	}
	hr := o.hr
	var rollback *restoreSource
	if o.safetyBackup != nil {
		if src, err := artifact.Resolve(o.safetyBackup); err == nil {
			rb := sourceFrom(src, o.safetyBackup)
			rollback = &rb
		}
	}
	src := sourceFrom(o.source, o.backup)
	if size, sum, ok := pinned(o); ok {
		src.Size, src.SHA256 = size, sum
	}
	cm, err := buildCapture(r.Namespace, o.job, o.app, live, hr, src, rollback)
	if err != nil {
		return err
	}
	if o.cluster == nil {
		cm.Data[captureKeyFrom] = o.prior.name
	}
	if o.point != nil && o.point.res.Pinned {
		point, err := o.point.res.Pin.CaptureText()
		if err != nil {
			return err
		}
		cm.Data[pointintime.CaptureKey] = point
	}
	if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create capture ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// liveModel reads the cluster to capture from the API server: the live
// object whole (unknown fields included), exactly the one observed, or an
// absent cluster's prior capture.
func (r *Reconciler) liveModel(ctx context.Context, o *observation) (*unstructured.Unstructured, error) {
	if o.cluster == nil {
		return r.absentModel(ctx, o)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	if err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: clusterName}, live); err != nil {
		return nil, fmt.Errorf("read EtcdCluster %s/%s to capture it: %w", o.job.Namespace, clusterName, err)
	}
	if live.GetUID() != o.cluster.UID {
		return nil, fmt.Errorf("EtcdCluster %s/%s changed before it was captured; looking again", o.job.Namespace, clusterName)
	}
	return live, nil
}

func (r *Reconciler) deleteCapture(ctx context.Context, o *observation) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.capture.namespace, Name: o.capture.name,
		Labels: map[string]string{backupsv1alpha1.CaptureForLabel: o.job.Namespace}}}
	if err := r.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete capture ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// setSuspend sets the HelmRelease's spec.suspend, guarded by its
// resourceVersion so a concurrent edit is re-read rather than overwritten.
func (r *Reconciler) setSuspend(ctx context.Context, hr *helmv2.HelmRelease, suspend bool) error {
	patch := client.MergeFromWithOptions(hr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	hr.Spec.Suspend = suspend
	if err := r.Client.Patch(ctx, hr, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set suspend=%t on HelmRelease %s/%s: %w", suspend, hr.Namespace, hr.Name, err)
	}
	return nil
}

// deleteCluster deletes exactly the EtcdCluster that was observed (UID
// precondition), never one re-created in between. The decision to delete
// saw the HelmRelease suspended on a view caught up with the driver's own
// writes (decideStep suspends it first, else Flux would put the cluster
// straight back). A human who resumes it in the milliseconds between is
// not stopped by a live read either: the chart's cluster Flux then
// applies is rolled over (rollOver), suspended again and replaced by this
// restore's.
func (r *Reconciler) deleteCluster(ctx context.Context, o *observation) error {
	if o.hr != nil && !o.hr.Spec.Suspend {
		return fmt.Errorf("HelmRelease %s/%s is not suspended (any more); suspending it before the EtcdCluster is deleted", o.hr.Namespace, o.hr.Name)
	}
	uid := o.cluster.GetUID()
	err := r.Client.Delete(ctx, o.cluster, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
	return nil
}

// recreateCluster creates the EtcdCluster bootstrapped from the restore's
// (or the rollback's) source. A rejection the API server will repeat ends
// the restore at once instead of at the deadline.
func (r *Reconciler) recreateCluster(ctx context.Context, o *observation, d decision) error {
	obj, err := recreatedCluster(o, recreateSource(o), d.deadline)
	// Known by its UID from now on (recreatedBy), not by annotations; a
	// create whose answer was lost leaves the annotation to tell.
	r.madeCluster.forget(o.job.UID)
	if err == nil {
		err = r.Client.Create(ctx, obj)
	}
	if err == nil {
		r.madeCluster.add(o.job.UID, obj.GetUID())
	}
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		// AlreadyExists: the next observation tells ours from someone else's.
		return nil
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		what := "the API server rejected the re-created EtcdCluster: " + err.Error()
		next := failure(o, backupsv1alpha1.ReasonRecreateRejected, what)
		if rb := rollbackOf(o.job); rb != nil {
			next = decision{state: stateConclude, reason: backupsv1alpha1.ReasonRollbackFailed, message: rb.message + "; rolling back failed too: " + what}
		} else if d := failAfterPurge(o, backupsv1alpha1.ReasonRecreateRejected, what); d.state == stateStartRollback {
			next = d
		}
		_, err := r.report(ctx, o, next)
		return err
	default:
		return fmt.Errorf("create EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
}

// restoreProgressDeadline patches the healthy re-created cluster's
// spec.progressDeadlineSeconds back to the captured value, on exactly the
// object observed (optimistic lock), and then, outside a rollback, seals
// the restore's success in the capture, with that cluster's UID (sealed).
// The deadline goes first: a seal is the end of this step.
func (r *Reconciler) restoreProgressDeadline(ctx context.Context, o *observation) error {
	want := capturedProgressDeadline(o)
	if !progressDeadlineRestored(o) {
		c := o.cluster.DeepCopy()
		patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
		c.Spec.ProgressDeadlineSeconds = &want
		if err := r.Client.Patch(ctx, c, patch); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("put spec.progressDeadlineSeconds of EtcdCluster %s/%s back to %d: %w", c.Namespace, c.Name, want, err)
		}
	}
	if rollbackOf(o.job) != nil || sealed(o) {
		return nil
	}
	return r.seal(ctx, o, o.cluster.UID)
}

// seal records in the capture that this job's re-created cluster (by UID,
// when known) was found healthy: the restore succeeded. The merge patch
// sets those keys alone, so repeating it is harmless.
func (r *Reconciler) seal(ctx context.Context, o *observation, recreated types.UID) error {
	// The label only names the tenant for whoever watches the write (the
	// raw patch carries the data alone).
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.capture.namespace, Name: o.capture.name,
		Labels: map[string]string{backupsv1alpha1.CaptureForLabel: o.job.Namespace}}}
	data := map[string]string{captureKeySucceeded: string(o.job.UID)}
	if recreated != "" {
		data[captureKeyRecreated] = string(recreated)
	}
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("seal the restore in capture ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}
