package restore

import (
	"context"
	"fmt"
	"maps"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Every API write of a restore goes through this file: report writes the
// status a decision implies, act takes the decision's one step (the writes
// of the safety snapshot and Backup are in safety_writes.go, those of the
// staging step and of the control-plane fence in staging.go and planes.go,
// through internal/stagingjob and internal/cpfence). Each write is
// idempotent or guarded (UID preconditions, optimistic locks, create that
// tolerates AlreadyExists), so repeating it after a crash is harmless.

// report writes the status for d and, on a transition, an Event and
// metrics. It reports whether it wrote. The patch carries the
// resourceVersion the decision saw, so a decision made on a stale view
// cannot overwrite newer status (it conflicts and is retried).
func (r *Reconciler) report(ctx context.Context, o *observation, d decision) (bool, error) {
	if quiet(o, d) {
		return false, nil
	}
	prevReason := readyReason(o.job)
	want := desiredStatus(o, d)
	if equality.Semantic.DeepEqual(want, o.job.Status) {
		return false, nil
	}
	before := o.job.DeepCopy()
	if err := r.writeStatus(ctx, o, d); err != nil {
		return false, err
	}
	switch {
	case d.state == stateConclude:
		r.event(o, d.reason, story(o, d), !d.success)
		if keepsSuspended(o) {
			msg := keptSuspendedMessage(o)
			r.event(o, backupsv1alpha1.ReasonHelmReleaseKeptSuspended, msg, true)
			logr.FromContextOrDiscard(ctx).Info("HelmRelease kept suspended: the restore ended without a healthy cluster",
				"helmRelease", o.job.Namespace+"/"+o.app, "reason", d.reason, "recovery", msg)
		}
	case d.state == stateFinish:
		if outcomeOf(before) == nil {
			// A sealed success is concluded with its end: its Event too.
			r.event(o, d.reason, story(o, d), !d.success)
		}
		recordFinish(o.job)
		logr.FromContextOrDiscard(ctx).Info("restore finished", "phase", o.job.Status.Phase, "reason", d.reason, "message", d.message)
	case d.reason != "" && readyReason(o.job) != prevReason && milestones[backupsv1alpha1.RestoreReason(readyReason(o.job))]:
		r.event(o, backupsv1alpha1.RestoreReason(readyReason(o.job)), o.job.Status.Message,
			d.reason == backupsv1alpha1.ReasonReplacingRecreatedCluster)
	}
	return true, nil
}

// writeStatus writes the status d implies, guarded by the resourceVersion
// the decision saw, and expects to see the write.
func (r *Reconciler) writeStatus(ctx context.Context, o *observation, d decision) error {
	before := o.job.DeepCopy()
	o.job.Status = desiredStatus(o, d)
	if err := r.Client.Status().Patch(ctx, o.job, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write status of RestoreJob %s/%s: %w", o.job.Namespace, o.job.Name, err)
	}
	r.expect.expect(o.job.UID, jobChangedFrom(before.ResourceVersion), o.now)
	return nil
}

// quiet: d is a quick step that the next reconcile follows at once (hand
// the safety snapshot over, capture, suspend the HelmRelease): it writes
// no status of its own. The next write (the staging's, before it starts
// its Job) carries what they did: the conditions are derived from what is
// observed (SafetyBackup, EtcdClusterSpecCaptured), and none of these
// steps destroys anything. Three status writes of a restore's dozen were
// these.
//
// The re-create of a cluster captured live is quiet too: that the purge
// is over is read from the world (the captured UID is gone, and a cluster
// in its place is this job's or replaced), so the next write, the
// bootstrap's, records TargetPurged with EtcdClusterRecreated. The
// re-create into an absent cluster keeps its write: there TargetPurged is
// what says the staging is behind it.
//
// The artifact check of a small object (quickCheck) writes no status
// before it either: its own write, a moment later, records it. And the
// purge of a cluster captured live, after the staging, writes none: the
// staging's status already says the purge follows it, and the
// bootstrap's write records TargetPurged (read from the world, as for
// the re-create).
func quiet(o *observation, d decision) bool {
	if o.job.Status.Phase.IsTerminal() {
		return false
	}
	if d.state == stateVerifyArtifact && d.reason == backupsv1alpha1.ReasonVerifyingArtifact {
		return quickCheck(o)
	}
	if o.job.Status.StartedAt == nil {
		return false
	}
	switch {
	case (d.state == stateDeleteCluster || d.state == stateWaitPurge) && d.reason == backupsv1alpha1.ReasonPurgingCluster:
		// Only where the staging's status is the last one written: it
		// says the purge follows (not, say, WaitingForSnapshots).
		return capturedLive(o) && o.opts.bumpRevision() && rollbackOf(o.job) == nil && !purged(o.job) &&
			readyReason(o.job) == string(backupsv1alpha1.ReasonStaging)
	case d.state == stateHandOverSnapshot && d.reason == backupsv1alpha1.ReasonSafetyBackupRecorded,
		d.state == stateCapture && d.reason == backupsv1alpha1.ReasonSpecCaptured,
		d.state == stateSuspendHelmRelease && d.reason == backupsv1alpha1.ReasonHelmReleaseSuspended:
		return true
	case d.state == stateRecreate && d.reason == backupsv1alpha1.ReasonClusterPurged:
		return capturedLive(o)
	}
	return false
}

// carriedAhead: the status of d, the decision that follows the artifact
// check, may be written with the check's own write. Not a conclusion or
// a rollback (report records those, with their Events and metrics), nor
// a milestone (report's Event fires on the transition).
func carriedAhead(d decision) bool {
	switch d.state {
	case stateIgnore, stateConclude, stateStartRollback, stateFinish:
		return false
	}
	return d.reason != "" && !milestones[d.reason]
}

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
		if r.Schema != nil && !r.Schema.Serves(ctx, servedschema.RestoreJobCRD, servedschema.ImmutableSpec) {
			r.event(o, reasonSpecNotImmutable, "the installed RestoreJob CRD (Cozystack's own?) does not make spec immutable: "+
				"do not edit this RestoreJob while it runs; an edit takes effect at the next step (the restore source is frozen once the cluster is captured)", false)
		}
		return r.patchFinalizer(ctx, o.job, true)
	case stateRemoveFinalizer:
		// The staging claim is settled first, and again after a crash
		// in between: the finalizer is the record that it is done, not
		// the staging Job (a finished one is left to its TTL).
		if settles(o) {
			if err := r.settleStaging(ctx, o); err != nil {
				return err
			}
		}
		r.made.forget(o.job.UID)
		r.creds.forget(o.job.UID)
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
	case stateSuspendHelmRelease:
		return r.setSuspend(ctx, o.hr, true, "")
	case stateRestoreHelmRelease:
		// A sealed success, not yet written, goes on the HelmRelease with
		// its resume: once resumed, Flux may rewrite the cluster (and its
		// seal) before the end is written.
		seal := ""
		if outcomeOf(o.job) == nil && sealed(o) {
			seal = string(o.job.UID)
		}
		return r.setSuspend(ctx, o.hr, false, seal)
	case stateDeleteCluster:
		return r.deleteCluster(ctx, o)
	case stateRecreate:
		return r.recreateCluster(ctx, o, d)
	case stateDeleteCapture:
		return r.deleteCapture(ctx, o)
	case stateFence:
		return r.fence(ctx, o)
	case stateStage:
		return r.stage(ctx, o)
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
// resourceVersion so a concurrent edit is re-read rather than overwritten;
// a non-empty seal records a restore's success on it in the same patch.
func (r *Reconciler) setSuspend(ctx context.Context, hr *helmv2.HelmRelease, suspend bool, seal string) error {
	patch := client.MergeFromWithOptions(hr.DeepCopy(), client.MergeFromWithOptimisticLock{})
	hr.Spec.Suspend = suspend
	if seal != "" {
		ann := maps.Clone(hr.Annotations)
		if ann == nil {
			ann = map[string]string{}
		}
		ann[backupsv1alpha1.RestoreSucceededAnnotation] = seal
		hr.Annotations = ann
	}
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
	if err == nil {
		err = r.Client.Create(ctx, obj)
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
// spec.progressDeadlineSeconds back to the captured value and, outside a
// rollback, seals the restore's success on it (sealed), on exactly the
// object observed (optimistic lock).
func (r *Reconciler) restoreProgressDeadline(ctx context.Context, o *observation) error {
	c := o.cluster.DeepCopy()
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	want := capturedProgressDeadline(o)
	c.Spec.ProgressDeadlineSeconds = &want
	if rollbackOf(o.job) == nil {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(o.job.UID)
	}
	if err := r.Client.Patch(ctx, c, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("put spec.progressDeadlineSeconds of EtcdCluster %s/%s back to %d: %w", c.Namespace, c.Name, want, err)
	}
	return nil
}

// milestones are the steps of a restore that get an Event besides its
// end: the bad news `kubectl describe` must tell while the restore runs
// (it rolls back, the revision could not be raised, a re-created cluster
// is being replaced). The good news (a safety Backup exists, the cluster
// was purged and re-created) is in the milestone conditions and in the
// conclusion's Event (story.go), so an ordinary restore writes one Event.
var milestones = map[backupsv1alpha1.RestoreReason]bool{
	backupsv1alpha1.ReasonRollingBack:               true,
	backupsv1alpha1.ReasonHandingBack:               true,
	backupsv1alpha1.ReasonFenceDisabled:             true,
	backupsv1alpha1.ReasonControlPlanesNotRestarted: true,
	backupsv1alpha1.ReasonRevisionBumpedBlind:       true,
	backupsv1alpha1.ReasonRevisionNotRaised:         true,
	backupsv1alpha1.ReasonReplacingRecreatedCluster: true,
}

// event records a transition on the job; Warning when it is bad news.
func (r *Reconciler) event(o *observation, reason backupsv1alpha1.RestoreReason, msg string, warning bool) {
	if r.Recorder == nil || reason == "" {
		return
	}
	kind := corev1.EventTypeNormal
	if warning {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(o.job, nil, kind, string(reason), "Restore", "%s", textlimit.Note(msg))
}

// reasonSpecNotImmutable is the Event reason of a RestoreJob whose CRD lets
// its spec change.
const reasonSpecNotImmutable backupsv1alpha1.RestoreReason = "SpecNotImmutable"

func readyReason(job *backupsv1alpha1.RestoreJob) string {
	for _, c := range job.Status.Conditions {
		if c.Type == backupsv1alpha1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}
