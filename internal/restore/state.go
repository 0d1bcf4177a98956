package restore

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// state is where a restore stands, derived from observed objects only. Each
// state maps to exactly one idempotent step (or to waiting).
type state int

const (
	// stateIgnore: nothing to do (foreign RestoreJob, or finished and
	// cleaned up).
	stateIgnore state = iota
	// stateWaitBackup: the Backup does not exist (yet).
	stateWaitBackup
	stateAddFinalizer
	// stateFail writes a terminal Failed status; the cleanup states follow.
	stateFail
	stateWaitClaim
	stateAcquireClaim
	// stateWaitSnapshots: BackupJob snapshots of the cluster are running.
	stateWaitSnapshots
	stateCreateSafetySnapshot
	stateWaitSafetySnapshot
	stateRecordSafetyBackup
	stateHandOverSnapshot
	stateCapture
	stateSuspendHelmRelease
	stateDeleteCluster
	stateWaitPurge
	stateRecreate
	stateWaitHealthy
	stateSucceed
	// Cleanup of a finished (or deleted) job, in this order: the
	// HelmRelease goes back to its prior state before the claim is
	// released, so the next RestoreJob records the true prior state.
	stateRestoreHelmRelease
	stateReleaseClaim
	stateRemoveFinalizer
)

var stateNames = map[state]string{
	stateIgnore: "Ignore", stateWaitBackup: "WaitBackup", stateAddFinalizer: "AddFinalizer",
	stateFail: "Fail", stateWaitClaim: "WaitClaim", stateAcquireClaim: "AcquireClaim", stateWaitSnapshots: "WaitSnapshots",
	stateCreateSafetySnapshot: "CreateSafetySnapshot", stateWaitSafetySnapshot: "WaitSafetySnapshot",
	stateRecordSafetyBackup: "RecordSafetyBackup", stateHandOverSnapshot: "HandOverSnapshot",
	stateCapture: "Capture", stateSuspendHelmRelease: "SuspendHelmRelease",
	stateDeleteCluster: "DeleteCluster", stateWaitPurge: "WaitPurge", stateRecreate: "Recreate",
	stateWaitHealthy: "WaitHealthy", stateSucceed: "Succeed",
	stateRestoreHelmRelease: "RestoreHelmRelease", stateReleaseClaim: "ReleaseClaim",
	stateRemoveFinalizer: "RemoveFinalizer",
}

func (s state) String() string { return stateNames[s] }

// waits reports whether s only waits for someone else.
func (s state) waits() bool {
	return s == stateWaitBackup || s == stateWaitClaim || s == stateWaitSafetySnapshot || s == stateWaitSnapshots ||
		s == stateWaitPurge || s == stateWaitHealthy || s == stateIgnore
}

// decision is a state plus what to tell the user about it.
type decision struct {
	state   state
	reason  backupsv1alpha1.RestoreReason
	message string
	// deadline, when set, is when a waiting state gives up.
	deadline time.Time
}

// decide maps an observation to one decision. It is pure: no I/O.
func decide(o *observation, defaultTimeout time.Duration) decision {
	job := o.job
	owned := controllerutil.ContainsFinalizer(job, backupsv1alpha1.CleanupFinalizer)
	if job.Status.Phase.IsTerminal() {
		return decideCleanup(o, owned)
	}
	if !job.DeletionTimestamp.IsZero() {
		if !owned {
			return decision{state: stateIgnore}
		}
		return failure(o, backupsv1alpha1.ReasonRestoreJobDeleted,
			"the RestoreJob was deleted before the restore finished")
	}
	if !owned {
		if o.backup == nil {
			return waitBackup(o, defaultTimeout)
		}
		if !isEtcdStrategy(o.backup) {
			return decision{state: stateIgnore}
		}
		return decision{state: stateAddFinalizer}
	}
	if job.Status.StartedAt == nil {
		return decideBeforeClaim(o, defaultTimeout)
	}
	return decideClaimed(o, defaultTimeout)
}

func isEtcdStrategy(b *backupsv1alpha1.Backup) bool {
	ref := b.Spec.StrategyRef
	return ref.APIGroupOrEmpty() == strategyv1alpha1.GroupVersion.Group && ref.Kind == strategyv1alpha1.EtcdStrategyKind
}

func waitBackup(o *observation, defaultTimeout time.Duration) decision {
	deadline := o.job.CreationTimestamp.Add(o.opts.timeout(defaultTimeout))
	if !o.now.Before(deadline) {
		return decision{state: stateFail, reason: backupsv1alpha1.ReasonBackupNotFound, message: fmt.Sprintf(
			"Backup %s/%s did not appear within %s; create the RestoreJob again naming an existing Backup. Nothing was changed.",
			o.job.Namespace, o.job.Spec.BackupRef.Name, o.opts.timeout(defaultTimeout))}
	}
	return decision{state: stateWaitBackup, reason: backupsv1alpha1.ReasonBackupNotFound, deadline: deadline,
		message: fmt.Sprintf("waiting for Backup %s/%s to exist (until %s)", o.job.Namespace,
			o.job.Spec.BackupRef.Name, deadline.UTC().Format(time.RFC3339))}
}

// decideBeforeClaim runs the pre-flight checks, then queues for the claim.
func decideBeforeClaim(o *observation, defaultTimeout time.Duration) decision {
	if o.backup == nil {
		return waitBackup(o, defaultTimeout)
	}
	if reason, msg := preflight(o); reason != "" {
		return decision{state: stateFail, reason: reason, message: msg + " Nothing was changed."}
	}
	if o.holder != nil && !o.holder.HeldBy(o.job) {
		return decision{state: stateWaitClaim, reason: backupsv1alpha1.ReasonWaitingForClaim, message: fmt.Sprintf(
			"waiting for RestoreJob %s to finish its restore of application %s", o.holder.Name, o.app)}
	}
	if o.holder == nil {
		return decision{state: stateAcquireClaim, reason: backupsv1alpha1.ReasonWaitingForClaim,
			message: "claiming application " + o.app}
	}
	// Claim held, startedAt not yet written: the status sync writes it.
	return decision{state: stateAcquireClaim, reason: backupsv1alpha1.ReasonClaimAcquired,
		message: "holding the restore claim on application " + o.app}
}

// decideClaimed walks the destructive sequence for a job that took the claim.
func decideClaimed(o *observation, defaultTimeout time.Duration) decision {
	if o.holder == nil || !o.holder.HeldBy(o.job) {
		if o.holder == nil && o.capture == nil {
			// Lost before anything was captured: claim again.
			return decision{state: stateAcquireClaim, reason: backupsv1alpha1.ReasonClaimAcquired,
				message: "re-claiming application " + o.app}
		}
		return failure(o, backupsv1alpha1.ReasonClaimLost, "the restore claim (Lease "+o.job.Namespace+"/"+
			claim.LeaseName(o.app)+") was removed or taken over while the restore held it")
	}
	deadline := o.job.Status.StartedAt.Add(o.opts.timeout(defaultTimeout))
	d := decideStep(o)
	if d.state == stateFail || d.state == stateSucceed {
		return d
	}
	if !o.now.Before(deadline) {
		return failure(o, backupsv1alpha1.ReasonDeadlineExceeded, fmt.Sprintf(
			"the restore did not finish within %s (it was at step %s: %s); raise spec.options.restoreTimeoutSeconds or the --restore-deadline flag",
			o.opts.timeout(defaultTimeout), d.state, d.message))
	}
	d.deadline = deadline
	return d
}

func decideStep(o *observation) decision {
	if o.capture == nil {
		if o.captureErr != nil {
			return failure(o, backupsv1alpha1.ReasonCaptureUnreadable, "the capture ConfigMap cannot be used: "+o.captureErr.Error())
		}
		return decideSafety(o)
	}
	if o.hr != nil && !o.hr.Spec.Suspend {
		return decision{state: stateSuspendHelmRelease, reason: backupsv1alpha1.ReasonHelmReleaseSuspended,
			message: "suspending HelmRelease " + o.app}
	}
	if o.cluster != nil {
		return decideLiveCluster(o)
	}
	if o.pvcs > 0 {
		return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonPurgingCluster, message: fmt.Sprintf(
			"EtcdCluster %s is gone; waiting for %d PVC(s) labelled %s=%s to be deleted", clusterName, o.pvcs, instanceLabel, clusterName)}
	}
	return decision{state: stateRecreate, reason: backupsv1alpha1.ReasonClusterPurged, message: fmt.Sprintf(
		"re-creating EtcdCluster %s from s3://%s/%s", clusterName, o.capture.source.Bucket, o.capture.source.Key)}
}

func decideLiveCluster(o *observation) decision {
	if recreatedBy(o) {
		if !carriesSource(o.clusterTyped, o.capture.source) {
			return failure(o, backupsv1alpha1.ReasonClusterReplaced,
				"the EtcdCluster marked as re-created by this RestoreJob does not carry its restore source")
		}
		if healthy(o.clusterTyped) {
			return decision{state: stateSucceed, reason: backupsv1alpha1.ReasonRestoreCompleted, message: fmt.Sprintf(
				"EtcdCluster %s was restored from Backup %s (s3://%s/%s) and all %d members are ready",
				clusterName, o.capture.source.BackupName, o.capture.source.Bucket, o.capture.source.Key, o.clusterTyped.Status.ReadyMembers)}
		}
		return decision{state: stateWaitHealthy, reason: backupsv1alpha1.ReasonEtcdClusterBootstrapping,
			message: "waiting for the re-created EtcdCluster to be Available with every member ready (" + memberSummary(o.clusterTyped) + ")"}
	}
	if purged(o.job) {
		return failure(o, backupsv1alpha1.ReasonClusterReplaced,
			"an EtcdCluster this RestoreJob did not create appeared after the old one was purged; it was left untouched")
	}
	if !o.cluster.GetDeletionTimestamp().IsZero() {
		return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonPurgingCluster,
			message: "waiting for EtcdCluster " + clusterName + " to be deleted"}
	}
	if len(o.inflight) > 0 {
		return waitSnapshots(o)
	}
	return decision{state: stateDeleteCluster, reason: backupsv1alpha1.ReasonPurgingCluster,
		message: "deleting EtcdCluster " + clusterName}
}

func recreatedBy(o *observation) bool {
	return o.cluster.GetAnnotations()[backupsv1alpha1.RestoredByAnnotation] == string(o.job.UID)
}

func carriesSource(c *etcdv1alpha2.EtcdCluster, src restoreSource) bool {
	b := c.Spec.Bootstrap
	if b == nil || b.Restore == nil || b.Restore.Source.S3 == nil {
		return false
	}
	s3 := b.Restore.Source.S3
	return s3.Key == src.Key && s3.Bucket == src.Bucket && s3.Endpoint == src.Endpoint
}

// healthy is Available and every replica ready: the operator reports
// Available as soon as the seed member answers, before the others join.
func healthy(c *etcdv1alpha2.EtcdCluster) bool {
	if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable) {
		return false
	}
	want := int32(1)
	if c.Spec.Replicas != nil {
		want = *c.Spec.Replicas
	}
	return c.Status.ReadyMembers == want
}

func available(o *observation) bool {
	return o.clusterTyped != nil && meta.IsStatusConditionTrue(o.clusterTyped.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
}

func memberSummary(c *etcdv1alpha2.EtcdCluster) string {
	replicas := "unset"
	if c.Spec.Replicas != nil {
		replicas = fmt.Sprint(*c.Spec.Replicas)
	}
	avail := "no Available condition yet"
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable); cond != nil {
		avail = fmt.Sprintf("Available=%s/%s", cond.Status, cond.Reason)
	}
	return fmt.Sprintf("%s, %d/%s members ready", avail, c.Status.ReadyMembers, replicas)
}

func purged(job *backupsv1alpha1.RestoreJob) bool {
	return meta.IsStatusConditionTrue(job.Status.Conditions, backupsv1alpha1.RestoreConditionPurged)
}

// decideCleanup undoes what a finished or deleted job still holds.
func decideCleanup(o *observation, owned bool) decision {
	if !owned {
		return decision{state: stateIgnore}
	}
	if o.capture != nil && o.capture.hrPrior == hrNotSuspended && o.hr != nil && o.hr.Spec.Suspend {
		return decision{state: stateRestoreHelmRelease}
	}
	if o.holder != nil && o.holder.HeldBy(o.job) {
		return decision{state: stateReleaseClaim}
	}
	return decision{state: stateRemoveFinalizer}
}

// failure is a terminal failure whose message says how to recover.
func failure(o *observation, reason backupsv1alpha1.RestoreReason, what string) decision {
	return decision{state: stateFail, reason: reason, message: what + ". " + recoveryAdvice(o)}
}

func recoveryAdvice(o *observation) string {
	if o.capture == nil {
		return "Nothing was changed."
	}
	msg := fmt.Sprintf("The pre-restore EtcdCluster is kept in ConfigMap %s/%s (key %s); the HelmRelease %s is returned to its prior state (%s).",
		o.job.Namespace, o.capture.name, captureKeyCluster, o.app, o.capture.hrPrior)
	if o.safetyBackup != nil {
		msg += fmt.Sprintf(" The data as it was before the restore is in Backup %s/%s: create a RestoreJob naming it to go back.",
			o.job.Namespace, o.safetyBackup.Name)
	} else {
		msg += " No safety Backup was taken."
	}
	return msg
}

// waitSnapshots holds the restore while a BackupJob that started before the
// claim still streams a snapshot of the cluster: deleting the cluster under
// it would fail that backup for no reason.
func waitSnapshots(o *observation) decision {
	return decision{state: stateWaitSnapshots, reason: backupsv1alpha1.ReasonWaitingForSnapshots, message: fmt.Sprintf(
		"waiting for running EtcdSnapshot(s) %v of EtcdCluster %s to finish before touching it", o.inflight, clusterName)}
}
