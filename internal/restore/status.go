package restore

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// desiredStatus is the job's status after decision d: phase, Ready and the
// milestone conditions, all derived from what was observed. Only TargetPurged
// and startedAt are facts the driver relies on later; both are written
// before the step that depends on them.
func desiredStatus(o *observation, d decision) backupsv1alpha1.RestoreJobStatus {
	st := *o.job.Status.DeepCopy()
	now := metav1.NewTime(o.now)
	if o.job.Status.Phase.IsTerminal() {
		if c := helmReleaseCondition(o); c != nil && o.job.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
			setCondition(&st, c.Type, c.Status, backupsv1alpha1.RestoreReason(c.Reason), c.Message)
		}
		return st
	}
	if d.state == stateIgnore {
		// Another driver's RestoreJob: not a byte of it is ours to write.
		return st
	}
	heldByUs := o.holder != nil && o.holder.HeldBy(o.job)
	if st.StartedAt == nil && heldByUs {
		st.StartedAt = &now
	}
	switch {
	case d.state == stateFail:
		st.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	case d.state == stateSucceed:
		st.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	case st.StartedAt != nil:
		st.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	default:
		st.Phase = backupsv1alpha1.RestoreJobPhasePending
	}
	if d.reason != "" {
		ready := metav1.ConditionFalse
		if d.state == stateSucceed {
			ready = metav1.ConditionTrue
		}
		setCondition(&st, backupsv1alpha1.ConditionReady, ready, d.reason, d.message)
		st.Message = d.message
	}
	if st.Phase.IsTerminal() {
		st.CompletedAt = &now
	}
	setMilestones(&st, o, d, heldByUs)
	return st
}

func setMilestones(st *backupsv1alpha1.RestoreJobStatus, o *observation, d decision, heldByUs bool) {
	switch {
	case st.Phase.IsTerminal() && meta.FindStatusCondition(st.Conditions, backupsv1alpha1.RestoreConditionClaimed) != nil:
		setCondition(st, backupsv1alpha1.RestoreConditionClaimed, metav1.ConditionFalse, backupsv1alpha1.ReasonClaimReleased,
			"the restore claim is released as the job finishes")
	case heldByUs:
		setCondition(st, backupsv1alpha1.RestoreConditionClaimed, metav1.ConditionTrue, backupsv1alpha1.ReasonClaimAcquired,
			"holding the restore claim on application "+o.app)
	}
	if o.safetyBackup != nil {
		setCondition(st, backupsv1alpha1.RestoreConditionSafetyBackup, metav1.ConditionTrue, backupsv1alpha1.ReasonSafetyBackupRecorded,
			fmt.Sprintf("Backup %s/%s holds the data as it was before the restore", o.job.Namespace, o.safetyBackup.Name))
	} else if o.capture != nil && o.snapshot == nil {
		why := "the EtcdCluster was not Available"
		if o.opts.SafetySnapshot != nil {
			why = "spec.options.safetySnapshot is false"
		}
		setCondition(st, backupsv1alpha1.RestoreConditionSafetyBackup, metav1.ConditionFalse, backupsv1alpha1.ReasonSafetySnapshotSkipped,
			"no safety snapshot was taken: "+why)
	}
	if o.capture != nil {
		setCondition(st, backupsv1alpha1.RestoreConditionSpecCaptured, metav1.ConditionTrue, backupsv1alpha1.ReasonSpecCaptured,
			fmt.Sprintf("EtcdCluster saved in ConfigMap %s/%s (key %s); HelmRelease was %s", o.job.Namespace, o.capture.name,
				captureKeyCluster, o.capture.hrPrior))
	}
	if d.state == stateRecreate {
		setCondition(st, backupsv1alpha1.RestoreConditionPurged, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterPurged,
			"the old EtcdCluster and its PVCs are gone")
	}
	if o.cluster != nil && o.capture != nil && recreatedBy(o) {
		setCondition(st, backupsv1alpha1.RestoreConditionRecreated, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterRecreated,
			fmt.Sprintf("EtcdCluster re-created with bootstrap from s3://%s/%s", o.capture.source.Bucket, o.capture.source.Key))
	}
}

func setCondition(st *backupsv1alpha1.RestoreJobStatus, t string, s metav1.ConditionStatus, r backupsv1alpha1.RestoreReason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: string(r), Message: msg})
}

// syncStatus writes the desired status when it differs. It reports whether
// the phase became terminal with this write.
func (r *Reconciler) syncStatus(ctx context.Context, o *observation, d decision) (finished bool, err error) {
	want := desiredStatus(o, d)
	if equality.Semantic.DeepEqual(want, o.job.Status) {
		return false, nil
	}
	before := o.job.DeepCopy()
	o.job.Status = want
	if err := r.Client.Status().Patch(ctx, o.job, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("write status of RestoreJob %s/%s: %w", o.job.Namespace, o.job.Name, err)
	}
	return !before.Status.Phase.IsTerminal() && want.Phase.IsTerminal(), nil
}
