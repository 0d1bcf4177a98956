package restore

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A restore that fails once the old cluster is gone (the operator cannot
// bootstrap from the Backup, or the deadline passes) does not leave the
// application without its data: when a safety Backup was taken, the
// cluster is deleted again and re-created from it, and the job ends Failed
// saying so. The RolledBack condition, written before anything is deleted
// for the rollback, records why; its time starts the rollback's own budget.

// rollbackState is a rollback in progress, read back from its condition.
type rollbackState struct {
	reason  backupsv1alpha1.RestoreReason
	message string
	since   time.Time
}

func rollbackOf(job *backupsv1alpha1.RestoreJob) *rollbackState {
	c := meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.RestoreConditionRollback)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return &rollbackState{reason: backupsv1alpha1.RestoreReason(c.Reason), message: c.Message, since: c.LastTransitionTime.Time}
}

// failAfterPurge ends a restore that failed after the purge: by rolling
// back when it can and may, otherwise by failing with what is left.
func failAfterPurge(o *observation, reason backupsv1alpha1.RestoreReason, what string) decision {
	switch {
	case o.capture == nil || o.capture.rollback == nil:
		return failure(o, reason, what+"; no safety Backup was taken, so there is nothing to roll back to")
	case !o.opts.RollsBack():
		return failure(o, reason, what+"; spec.options.rollback is false, so the cluster was left as it is")
	}
	return decision{state: stateStartRollback, reason: backupsv1alpha1.ReasonRollingBack, message: what, cause: reason}
}

// decideRollback walks the rollback: suspend (still), delete the failed
// cluster, wait for its volumes, re-create from the safety Backup, wait
// until healthy, then conclude Failed.
func decideRollback(o *observation, rb *rollbackState, defaultTimeout time.Duration) decision {
	safety := o.capture.rollback
	deadline := rb.since.Add(o.opts.Timeout(defaultTimeout))
	gaveUp := func(what string) decision {
		return decision{state: stateConclude, reason: backupsv1alpha1.ReasonRollbackFailed, message: fmt.Sprintf(
			"%s; rolling back to safety Backup %s/%s failed too: %s. The pre-restore EtcdCluster definition is in ConfigMap %s/%s (key %s); restore Backup %s with a new RestoreJob once the cause is fixed. %s",
			rb.message, o.job.Namespace, safety.BackupName, what, o.capture.namespace, o.capture.name, captureKeyCluster, safety.BackupName, helmReleaseAdvice(o))}
	}
	d := rollbackStep(o, rb, safety, gaveUp)
	if d.state == stateConclude || d.state == stateRestoreProgressDeadline {
		return d
	}
	if !o.now.Before(deadline) {
		return gaveUp(fmt.Sprintf("it did not finish within %s (at step %s: %s)", o.opts.Timeout(defaultTimeout), d.state, d.message))
	}
	d.deadline = deadline
	return d
}

func rollbackStep(o *observation, rb *rollbackState, safety *restoreSource, gaveUp func(string) decision) decision {
	if o.hr != nil && !o.hr.Spec.Suspend {
		return decision{state: stateSuspendHelmRelease, reason: backupsv1alpha1.ReasonRollingBack,
			message: "suspending HelmRelease " + o.app + " again to roll back"}
	}
	if o.cluster != nil {
		switch {
		case recreatedBy(o) && o.cluster.GetAnnotations()[backupsv1alpha1.RestoredFromAnnotation] == safety.BackupName:
			if why := bootstrapFailed(o.cluster); why != "" {
				return gaveUp("the etcd-operator could not bootstrap from it either: " + why)
			}
			if healthy(o.cluster) {
				if !progressDeadlineRestored(o) {
					return decision{state: stateRestoreProgressDeadline}
				}
				return decision{state: stateConclude, reason: rb.reason, message: fmt.Sprintf(
					"%s. The restore was rolled back: EtcdCluster %s was re-created from safety Backup %s/%s and holds the data as it was before the restore (all %d members ready)",
					rb.message, clusterName, o.job.Namespace, safety.BackupName, o.cluster.Status.ReadyMembers)}
			}
			return decision{state: stateWaitHealthy, reason: backupsv1alpha1.ReasonRollingBack, message: fmt.Sprintf(
				"rolling back: waiting for EtcdCluster %s, re-created from safety Backup %s, to be healthy (%s)",
				clusterName, safety.BackupName, memberSummary(o.cluster))}
		case !recreatedBy(o) && !helmOwned(o):
			return gaveUp("an EtcdCluster this RestoreJob did not create (and not HelmRelease " + o.app + "'s) appeared; it was left untouched")
		case !o.cluster.GetDeletionTimestamp().IsZero():
			return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonRollingBack,
				message: "rolling back: waiting for the failed EtcdCluster to be deleted"}
		}
		return decision{state: stateDeleteCluster, reason: backupsv1alpha1.ReasonRollingBack,
			message: "rolling back: deleting the EtcdCluster the restore could not bring up"}
	}
	if o.pvcs > 0 {
		d := waitPVCs(o)
		d.reason = backupsv1alpha1.ReasonRollingBack
		return d
	}
	return decision{state: stateRecreate, reason: backupsv1alpha1.ReasonRollingBack, message: fmt.Sprintf(
		"rolling back: re-creating EtcdCluster %s from safety Backup %s (s3://%s/%s)", clusterName, safety.BackupName, safety.Bucket, safety.Key)}
}
