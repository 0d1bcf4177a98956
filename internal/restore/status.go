package restore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// desiredStatus is the job's status after decision d: phase, Ready and the
// milestone conditions, all derived from what was observed. Pure.
func desiredStatus(o *observation, d decision) backupsv1alpha1.RestoreJobStatus {
	st := *o.job.Status.DeepCopy()
	now := metav1.NewTime(o.now)
	if o.job.Status.Phase.IsTerminal() {
		if d.state == stateReportHelmRelease {
			cur := meta.FindStatusCondition(st.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
			if c := helmReleaseReport(o, cur); c != nil {
				meta.SetStatusCondition(&st.Conditions, *c)
			}
		}
		return st
	}
	switch {
	case d.state == stateIgnore:
		// Another driver's RestoreJob: not a byte of it is ours to write.
		return st
	case d.reason == "" && (d.state == stateAddFinalizer || d.state == stateAcquireClaim):
		// Steps that need no status of their own: the next one reports.
		return st
	}
	heldByUs := o.holder != nil && o.holder.HeldBy(o.job)
	if st.StartedAt == nil && heldByUs {
		st.StartedAt = &now
	}
	switch {
	case d.state == stateFinish && d.success:
		st.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	case d.state == stateFinish:
		st.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	case st.StartedAt != nil:
		st.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	default:
		st.Phase = backupsv1alpha1.RestoreJobPhasePending
	}
	reason, msg := d.reason, textlimit.Message(d.message)
	switch d.state {
	case stateConclude:
		setOutcome(&st, o, d, msg)
		reason, msg = backupsv1alpha1.ReasonHandingBack, textlimit.Message("handing the application back: "+d.message)
	case stateStartRollback:
		setCondition(&st, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, d.cause, msg)
	case stateFinish:
		if outcomeOf(o.job) == nil {
			// A sealed success: its Outcome is written with the end.
			setOutcome(&st, o, d, msg)
		}
	}
	if reason != "" {
		ready := metav1.ConditionFalse
		if d.state == stateFinish && d.success {
			ready = metav1.ConditionTrue
		}
		setCondition(&st, backupsv1alpha1.ConditionReady, ready, reason, msg)
		st.Message = msg
	}
	if st.Phase.IsTerminal() {
		st.CompletedAt = &now
		// What is known of the resumed HelmRelease goes with the end.
		cur := meta.FindStatusCondition(st.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
		if c := helmReleaseReport(o, cur); c != nil {
			meta.SetStatusCondition(&st.Conditions, *c)
		}
	}
	setMilestones(&st, o, d, heldByUs)
	return st
}

func setMilestones(st *backupsv1alpha1.RestoreJobStatus, o *observation, d decision, heldByUs bool) {
	switch {
	case heldByUs:
		setCondition(st, backupsv1alpha1.RestoreConditionClaimed, metav1.ConditionTrue, backupsv1alpha1.ReasonClaimAcquired,
			"holding the restore claim on EtcdCluster "+o.target.String())
	case d.state == stateFinish && meta.IsStatusConditionTrue(st.Conditions, backupsv1alpha1.RestoreConditionClaimed):
		// Told with the end (one write), not when it happens.
		setCondition(st, backupsv1alpha1.RestoreConditionClaimed, metav1.ConditionFalse, backupsv1alpha1.ReasonClaimReleased,
			"the restore claim is released")
	}
	if o.safetyBackup != nil {
		setCondition(st, backupsv1alpha1.RestoreConditionSafetyBackup, metav1.ConditionTrue, backupsv1alpha1.ReasonSafetyBackupRecorded,
			fmt.Sprintf("Backup %s/%s holds the data as it was before the restore", o.job.Namespace, o.safetyBackup.Name))
	} else if o.capture != nil && o.snapshot == nil {
		setCondition(st, backupsv1alpha1.RestoreConditionSafetyBackup, metav1.ConditionFalse, backupsv1alpha1.ReasonSafetySnapshotSkipped,
			"no safety snapshot was taken: spec.options.safetySnapshot is false")
	}
	if o.capture != nil {
		msg := fmt.Sprintf("EtcdCluster saved in ConfigMap %s/%s (key %s); HelmRelease was %s", o.capture.namespace, o.capture.name,
			captureKeyCluster, o.capture.hrPrior)
		if o.capture.from != "" {
			msg += fmt.Sprintf("; the EtcdCluster did not exist, its definition was copied from capture ConfigMap %s/%s", o.capture.namespace, o.capture.from)
		}
		setCondition(st, backupsv1alpha1.RestoreConditionSpecCaptured, metav1.ConditionTrue, backupsv1alpha1.ReasonSpecCaptured, msg)
	}
	if (d.state == stateRecreate || purgeSeen(o)) && !purged(o.job) {
		setCondition(st, backupsv1alpha1.RestoreConditionPurged, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterPurged,
			"the old EtcdCluster and its PVCs are gone")
	}
	setPlaneMilestones(st, o, heldByUs)
	if _, ignored := restoreoptions.KindOf(o.job, restoreRecords(o)); ignored {
		setCondition(st, backupsv1alpha1.RestoreConditionDryRunChangeIgnored, metav1.ConditionTrue, backupsv1alpha1.ReasonDryRunChangeIgnored,
			restoreoptions.IgnoredChange(restoreoptions.Restore))
	} else {
		meta.RemoveStatusCondition(&st.Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored)
	}
	if c := revisionCondition(o, d); c != nil && (heldByUs || o.staging != nil) {
		setConditionRaw(st, *c)
	}
	if o.capture != nil && recreatedBy(o) {
		from := o.cluster.GetAnnotations()[backupsv1alpha1.RestoredFromAnnotation]
		setCondition(st, backupsv1alpha1.RestoreConditionRecreated, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterRecreated,
			fmt.Sprintf("EtcdCluster re-created with bootstrap from Backup %s", from))
	}
}

// setOutcome records the decided outcome and, with it, what becomes of the
// HelmRelease.
func setOutcome(st *backupsv1alpha1.RestoreJobStatus, o *observation, d decision, msg string) {
	status := metav1.ConditionFalse
	if d.success {
		status = metav1.ConditionTrue
	}
	setCondition(st, backupsv1alpha1.RestoreConditionOutcome, status, d.reason, msg)
	if c := helmReleaseOnConclude(o); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
	}
}

func setCondition(st *backupsv1alpha1.RestoreJobStatus, t string, s metav1.ConditionStatus, r backupsv1alpha1.RestoreReason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: string(r), Message: textlimit.Message(msg)})
}

func setConditionRaw(st *backupsv1alpha1.RestoreJobStatus, c metav1.Condition) {
	meta.SetStatusCondition(&st.Conditions, c)
}

// capturedLive: the capture is of a live cluster, by UID, so whether it is
// gone can be read from the world.
func capturedLive(o *observation) bool {
	return o.capture != nil && o.capture.from == "" && o.capture.uid != ""
}

// purgeSeen: the cluster captured live and its PVCs are gone, or this job
// re-created it (the quiet re-create's purge, recorded by the next write).
func purgeSeen(o *observation) bool {
	return capturedLive(o) && rollbackOf(o.job) == nil && ((o.cluster == nil && o.pvcs == 0) || recreatedBy(o))
}
