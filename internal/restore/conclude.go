package restore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// Once the outcome is decided (the Outcome condition), the application is
// handed back before the job says it is done: a safety snapshot still
// running is recorded, the HelmRelease returns to its prior state, the
// claim is released, a successful restore's capture is removed, and only
// then is the terminal phase written. So `kubectl wait` on the phase never
// returns while the application is still suspended or claimed.

// decideHandBack picks the next hand-back step.
func decideHandBack(o *observation, out *outcome) decision {
	if s := o.snapshot; s != nil && o.safetyConflict == "" && s.DeletionTimestamp.IsZero() {
		switch {
		case !s.Ended() && (safetyAbandoned(o) || deletedUncommitted(o)):
			// Nobody completes it (the operator is down), or nobody needs
			// it (the job was deleted before it destroyed anything):
			// deleted, so it cannot land later as an object no Backup
			// records, and the claim is released now, not at its bound.
			return decision{state: stateAbandonSafetySnapshot}
		case !s.Ended():
			// A started snapshot lands in S3 either way: it is recorded,
			// not orphaned.
			return decision{state: stateWaitSafetySnapshot, deadline: safetyGiveUpAt(s)}
		case s.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete && o.safetyBackup == nil:
			return decision{state: stateRecordSafetyBackup}
		case s.Status.Phase == etcdv1alpha2.SnapshotPhaseComplete && !ownedByBackup(s, o.safetyBackup):
			return decision{state: stateHandOverSnapshot}
		}
	}
	// The control planes come back first (restarted on a healthy cluster,
	// then unfenced); the staging claim is settled with the finalizer's
	// removal (act.go), once the claim is released.
	if d, ok := decidePlanesBack(o); ok {
		return d
	}
	// The hand-back steps keep the status the conclusion wrote ("handing
	// the application back: ..."): no status write of their own.
	heldByUs := o.holder != nil && o.holder.HeldBy(o.job)
	heldByOther := o.holder != nil && !heldByUs
	if o.capture != nil && o.capture.hrPrior == hrNotSuspended && o.hr != nil && !keptSuspended(o.job) {
		switch {
		case outcomeOf(o.job) == nil:
			// A sealed success not yet written is handed back only under
			// its claim (after it, a suspension is another restore's).
			if heldByUs && o.hr.Spec.Suspend {
				return decision{state: stateRestoreHelmRelease}
			}
		case o.hr.Spec.Suspend && !heldByOther:
			return decision{state: stateRestoreHelmRelease}
		}
	}
	if heldByUs {
		if d, ok := awaitFlux(o); ok {
			return d
		}
		return decision{state: stateReleaseClaim}
	}
	if outcomeOf(o.job) == nil {
		// A sealed success: the end is written now (the capture still
		// says what the HelmRelease was); the capture, the staging claim
		// and the finalizer are settled after it (decideAfterEnd).
		return decision{state: stateFinish, reason: out.reason, message: out.message, success: out.success}
	}
	// The capture is kept only where it is still the way back: a restore
	// that failed after the purge. One that never destroyed anything (or
	// succeeded) leaves nothing behind.
	if o.capture != nil && (out.success || !committed(o)) {
		return decision{state: stateDeleteCapture}
	}
	if controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) {
		return decision{state: stateRemoveFinalizer}
	}
	return decision{state: stateFinish, reason: out.reason, message: out.message, success: out.success}
}

// decideAfterEnd: a finished job settles what a sealed success left (its
// staging claim and its capture, which names the claim, then the
// finalizer) and reports on its HelmRelease.
func decideAfterEnd(o *observation) decision {
	if o.capture != nil && o.job.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
		return decision{state: stateDeleteCapture}
	}
	if controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) {
		return decision{state: stateRemoveFinalizer}
	}
	cur := meta.FindStatusCondition(o.job.Status.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	if next := helmReleaseReport(o, cur); next != nil && (next.Reason != cur.Reason || next.Message != cur.Message || next.Status != cur.Status) {
		return decision{state: stateReportHelmRelease}
	}
	return decision{state: stateIgnore}
}

// helmReleaseOnConclude is the HelmReleaseReconciled condition recorded
// with the outcome, from the HelmRelease's state before the restore; nil
// when the restore never captured (and so never touched) it.
func helmReleaseOnConclude(o *observation) *metav1.Condition {
	if o.capture == nil {
		return nil
	}
	c := &metav1.Condition{Type: backupsv1alpha1.RestoreConditionHelmReleaseReconciled}
	switch {
	case o.capture.hrPrior == hrAbsent:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(backupsv1alpha1.ReasonHelmReleaseNotFound),
			"there was no HelmRelease "+o.app+"; the EtcdCluster is not managed by Flux"
	case o.capture.hrPrior == hrSuspended:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(backupsv1alpha1.ReasonHelmReleaseLeftSuspended),
			"HelmRelease "+o.app+" was suspended before the restore and is left suspended"
	case keepsSuspended(o):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended), keptSuspendedMessage(o)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, string(backupsv1alpha1.ReasonHelmReleaseReconciling),
			"HelmRelease "+o.app+" is resumed; waiting for it to reconcile"
	}
	return c
}

// helmReleaseReport updates a Reconciling HelmReleaseReconciled condition
// from the HelmRelease; nil when there is nothing to follow.
func helmReleaseReport(o *observation, cur *metav1.Condition) *metav1.Condition {
	if cur == nil || cur.Reason != string(backupsv1alpha1.ReasonHelmReleaseReconciling) {
		return nil
	}
	c := cur.DeepCopy()
	set := func(s metav1.ConditionStatus, r backupsv1alpha1.RestoreReason, msg string) *metav1.Condition {
		c.Status, c.Reason, c.Message = s, string(r), msg
		return c
	}
	switch {
	case o.hr == nil:
		return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseNotFound, "HelmRelease "+o.app+" no longer exists")
	case o.hr.Spec.Suspend:
		return set(metav1.ConditionUnknown, backupsv1alpha1.ReasonHelmReleaseReconciling, "HelmRelease "+o.app+" is suspended again")
	}
	ready := meta.FindStatusCondition(o.hr.Status.Conditions, "Ready")
	// Ready must describe the resumed generation, not the one before the
	// suspension; conditions without their own generation fall back to
	// the status-level one.
	gen := int64(0)
	if ready != nil {
		gen = ready.ObservedGeneration
		if gen == 0 {
			gen = o.hr.Status.ObservedGeneration
		}
	}
	if ready == nil || gen < o.hr.Generation {
		return set(metav1.ConditionUnknown, backupsv1alpha1.ReasonHelmReleaseReconciling,
			"waiting for HelmRelease "+o.app+" to reconcile its resumed generation")
	}
	switch ready.Status {
	case metav1.ConditionTrue:
		return set(metav1.ConditionTrue, backupsv1alpha1.ReasonHelmReleaseReady, "HelmRelease "+o.app+" reconciled Ready after the restore")
	case metav1.ConditionUnknown:
		// Flux marks Ready Unknown (Progressing) while it installs or
		// upgrades: no verdict yet.
		return set(metav1.ConditionUnknown, backupsv1alpha1.ReasonHelmReleaseReconciling,
			fmt.Sprintf("HelmRelease %s is reconciling its resumed generation: %s: %s", o.app, ready.Reason, ready.Message))
	}
	return set(metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseNotReady,
		fmt.Sprintf("HelmRelease %s is not Ready after the restore: %s: %s", o.app, ready.Reason, ready.Message))
}
