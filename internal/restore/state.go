package restore

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// state is where a restore stands, derived from observed objects only. Each
// state maps to exactly one idempotent step (or to waiting).
type state int

const (
	// stateIgnore: nothing to do (foreign RestoreJob, or finished).
	stateIgnore state = iota
	// stateWaitBackup: the Backup does not exist (yet).
	stateWaitBackup
	stateAddFinalizer
	// stateConclude records the decided outcome (the Outcome condition);
	// the hand-back states follow, then stateFinish.
	stateConclude
	stateWaitClaim
	stateBreakStaleClaim
	stateAcquireClaim
	stateVerifyArtifact
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
	// stateStartRollback records that the restore failed after the purge
	// and the cluster goes back to the safety Backup.
	stateStartRollback
	// Hand-back, in this order: the HelmRelease goes back to its prior
	// state before the claim is released (so the next RestoreJob records
	// the true prior state), and the terminal phase is written last.
	stateRestoreHelmRelease
	// stateWaitHelmRelease gives Flux a moment to reconcile the resumed
	// HelmRelease before the claim is released (fluxwait.go).
	stateWaitHelmRelease
	stateReleaseClaim
	stateDeleteCapture
	stateRemoveFinalizer
	stateFinish
	// stateReportHelmRelease updates, after the end, whether the resumed
	// HelmRelease reconciled.
	stateReportHelmRelease
	// stateFence makes the Kamaji control planes read-only; stateWaitFence
	// waits for Kamaji to enforce it.
	stateFence
	stateWaitFence
	// stateStage reads the live revision and starts the staging Job;
	// stateWaitStaging waits for it.
	stateStage
	stateWaitStaging
	// Hand-back of the control planes (the staging claim is settled with
	// the finalizer's removal).
	stateRestartControlPlanes
	stateWaitRestart
	stateLiftFence
	// stateAbandonSafetySnapshot deletes a safety snapshot that had no
	// outcome within its bound.
	stateAbandonSafetySnapshot
	// stateRestoreProgressDeadline puts the healthy re-created cluster's
	// spec.progressDeadlineSeconds back to its captured value.
	stateRestoreProgressDeadline
	// stateReadRevision starts a read of the live revision (for the
	// staging, or again before the purge) off the workers;
	// stateWaitRevision waits for its end (liverevision.Reads).
	stateReadRevision
	stateWaitRevision
	// stateCarrySeal copies an earlier driver's seal into the capture
	// before the hand-back (sealed).
	stateCarrySeal
	// statePinBase pins the base of a restore to a point on the job.
	statePinBase
)

var stateNames = map[state]string{
	stateIgnore: "Ignore", stateWaitBackup: "WaitBackup", stateAddFinalizer: "AddFinalizer", stateConclude: "Conclude",
	stateWaitClaim: "WaitClaim", stateBreakStaleClaim: "BreakStaleClaim", stateAcquireClaim: "AcquireClaim",
	stateVerifyArtifact: "VerifyArtifact", stateWaitSnapshots: "WaitSnapshots",
	stateCreateSafetySnapshot: "CreateSafetySnapshot", stateWaitSafetySnapshot: "WaitSafetySnapshot",
	stateRecordSafetyBackup: "RecordSafetyBackup", stateHandOverSnapshot: "HandOverSnapshot",
	stateCapture: "Capture", stateSuspendHelmRelease: "SuspendHelmRelease",
	stateDeleteCluster: "DeleteCluster", stateWaitPurge: "WaitPurge", stateRecreate: "Recreate",
	stateWaitHealthy: "WaitHealthy", stateStartRollback: "StartRollback",
	stateRestoreHelmRelease: "RestoreHelmRelease", stateWaitHelmRelease: "WaitHelmRelease", stateReleaseClaim: "ReleaseClaim", stateDeleteCapture: "DeleteCapture",
	stateRemoveFinalizer: "RemoveFinalizer", stateFinish: "Finish", stateReportHelmRelease: "ReportHelmRelease",
	stateFence: "FenceControlPlanes", stateWaitFence: "WaitFence", stateStage: "Stage", stateWaitStaging: "WaitStaging",
	stateRestartControlPlanes: "RestartControlPlanes", stateWaitRestart: "WaitRestart", stateLiftFence: "LiftFence",
	stateAbandonSafetySnapshot:   "AbandonSafetySnapshot",
	stateRestoreProgressDeadline: "RestoreProgressDeadline",
	stateReadRevision:            "ReadRevision", stateWaitRevision: "WaitRevision",
	stateCarrySeal: "CarrySeal", statePinBase: "PinBase",
}

func (s state) String() string { return stateNames[s] }

// waits reports whether s only waits for someone else.
func (s state) waits() bool {
	switch s {
	case stateIgnore, stateWaitBackup, stateWaitClaim, stateWaitSafetySnapshot, stateWaitSnapshots,
		stateWaitPurge, stateWaitHealthy, stateWaitFence, stateWaitStaging, stateWaitRestart, stateWaitHelmRelease,
		stateWaitRevision:
		return true
	}
	return false
}

// decision is a state plus what to tell the user about it.
type decision struct {
	state   state
	reason  backupsv1alpha1.RestoreReason
	message string
	// deadline, when set, is when a waiting state gives up.
	deadline time.Time
	// success is the outcome stateConclude records.
	success bool
	// cause is the failure stateStartRollback records.
	cause backupsv1alpha1.RestoreReason
	// purpose is the read stateReadRevision starts.
	purpose liverevision.Purpose
}

// decide maps an observation to one decision. It is pure: no I/O.
func decide(o *observation, defaultTimeout time.Duration) decision {
	job := o.job
	if kind, _ := restoreoptions.KindOf(job, restoreRecords(o)); kind == restoreoptions.DryRun {
		// A rehearsal: internal/rehearsal's, from start to end. A
		// restore that started stays one, whatever dryRun says now.
		return decision{state: stateIgnore}
	}
	if job.Status.Phase.IsTerminal() {
		return decideAfterEnd(o)
	}
	if out := outcomeOf(job); out != nil {
		return decideHandBack(o, out)
	}
	if sealed(o) {
		if legacySealOnly(o) {
			return decision{state: stateCarrySeal}
		}
		if len(fencedByUs(o)) > 0 {
			// Restarting control planes takes a while: the outcome is
			// written first, for the user to see while it happens.
			return sealedSuccess(o)
		}
		return decideHandBack(o, &outcome{success: true, reason: backupsv1alpha1.ReasonRestoreCompleted, message: sealedSuccess(o).message})
	}
	if !controllerutil.ContainsFinalizer(job, backupsv1alpha1.RestoreFinalizer) {
		switch {
		case !job.DeletionTimestamp.IsZero():
			return decision{state: stateIgnore}
		case o.backup == nil:
			return waitBackup(o, defaultTimeout)
		case !isEtcdStrategy(o.backup):
			return decision{state: stateIgnore}
		}
		return decision{state: stateAddFinalizer}
	}
	if !job.DeletionTimestamp.IsZero() && !committed(o) {
		return failure(o, backupsv1alpha1.ReasonRestoreJobDeleted, "the RestoreJob was deleted before the restore destroyed anything")
	}
	if job.Status.StartedAt == nil && !o.holder.HeldBy(job) {
		return decideBeforeClaim(o, defaultTimeout)
	}
	return decideClaimed(o, defaultTimeout)
}

// restoreRecords: the driver's namespace holds a record of this job's
// restore (its capture, its claim), whatever the job itself shows.
func restoreRecords(o *observation) bool {
	return o.capture != nil || o.captureErr != nil || o.holder.HeldBy(o.job)
}

// startedAt is when the job took its claim: as recorded, or now for the
// decision that records it.
func startedAt(o *observation) time.Time {
	if o.job.Status.StartedAt != nil {
		return o.job.Status.StartedAt.Time
	}
	return o.now
}

// IsEtcdStrategy reports whether b was taken by the Etcd strategy: the
// RestoreJobs of such Backups are this driver's.
func IsEtcdStrategy(b *backupsv1alpha1.Backup) bool { return isEtcdStrategy(b) }

func isEtcdStrategy(b *backupsv1alpha1.Backup) bool {
	return strategyv1alpha1.IsEtcd(b.Spec.StrategyRef)
}

func waitBackup(o *observation, defaultTimeout time.Duration) decision {
	deadline := o.job.CreationTimestamp.Add(o.opts.Timeout(defaultTimeout))
	if !o.now.Before(deadline) {
		return failure(o, backupsv1alpha1.ReasonBackupNotFound, fmt.Sprintf(
			"Backup %s/%s did not appear within %s; create the RestoreJob again naming an existing Backup",
			o.job.Namespace, o.job.Spec.BackupRef.Name, o.opts.Timeout(defaultTimeout)))
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
	if d, done := decidePoint(o, false); !done {
		return d
	}
	if reason, msg := preflight(o); reason != "" {
		return failure(o, reason, msg)
	}
	if o.holder != nil && !o.holder.HeldBy(o.job) {
		if o.holderGone {
			return decision{state: stateBreakStaleClaim, reason: backupsv1alpha1.ReasonClaimBroken, message: fmt.Sprintf(
				"removing the claim on EtcdCluster %s left behind by RestoreJob %s/%s, which no longer holds it",
				o.target, o.holder.Namespace, o.holder.Name)}
		}
		// The cluster may be mid-replacement by the holder: judge it only
		// once the claim is free.
		return decision{state: stateWaitClaim, reason: backupsv1alpha1.ReasonWaitingForClaim, message: fmt.Sprintf(
			"waiting for RestoreJob %s to finish its restore of EtcdCluster %s", o.holder.Name, o.target)}
	}
	if reason, msg := clusterPreflight(o); reason != "" {
		return failure(o, reason, msg)
	}
	// The claim is free: take it. The status says so with the first step
	// under the claim (no write of its own).
	return decision{state: stateAcquireClaim}
}

// committed reports whether the restore has asked for the live cluster to
// be deleted: from then on only a re-created cluster hands the application
// back in a usable state.
func committed(o *observation) bool {
	if o.capture == nil {
		return false
	}
	if o.capture.from != "" {
		// The cluster was absent from the start: only deleting or
		// creating one commits.
		return purged(o.job) || recreatedBy(o) || (o.cluster != nil && !o.cluster.GetDeletionTimestamp().IsZero())
	}
	return purged(o.job) || o.cluster == nil || !o.cluster.GetDeletionTimestamp().IsZero() || recreatedBy(o) || replaced(o)
}

// replaced: the live cluster is not the one captured (that one was
// deleted, and another put in its place).
func replaced(o *observation) bool {
	return o.capture != nil && o.capture.uid != "" && o.cluster != nil && o.cluster.UID != o.capture.uid
}

func purged(job *backupsv1alpha1.RestoreJob) bool {
	return meta.IsStatusConditionTrue(job.Status.Conditions, backupsv1alpha1.RestoreConditionPurged)
}

// recreatedBy: the live cluster is the one this job created. Once the
// restore sealed its success the capture names that cluster by UID; until
// then the cluster this process created is known by the UID the API server
// gave it, and after a restart by the restored-by annotation the re-create
// sets, except on the cluster captured live, which is never one this job
// created whatever its annotations say (a tenant can write them).
func recreatedBy(o *observation) bool {
	c := o.cluster
	if c == nil {
		return false
	}
	if o.capture != nil {
		if o.capture.recreated != "" {
			return c.UID == o.capture.recreated
		}
		if o.capture.uid != "" && c.UID == o.capture.uid {
			return false
		}
	}
	if o.created != "" {
		return c.UID == o.created
	}
	return c.GetAnnotations()[backupsv1alpha1.RestoredByAnnotation] == string(o.job.UID)
}

// failure concludes the restore as failed; the message says how to recover.
func failure(o *observation, reason backupsv1alpha1.RestoreReason, what string) decision {
	return decision{state: stateConclude, reason: reason, message: what + ". " + recoveryAdvice(o)}
}

// success concludes the restore as done.
func success(msg string) decision {
	return decision{state: stateConclude, reason: backupsv1alpha1.ReasonRestoreCompleted, message: msg, success: true}
}

func recoveryAdvice(o *observation) string {
	if !committed(o) {
		if o.capture == nil {
			return "Nothing was changed."
		}
		return "The EtcdCluster was not touched; the HelmRelease is returned to its prior state."
	}
	msg := fmt.Sprintf("The pre-restore EtcdCluster definition is kept in ConfigMap %s/%s (key %s). %s",
		o.capture.namespace, o.capture.name, captureKeyCluster, helmReleaseAdvice(o))
	if o.capture.rollback != nil {
		msg += fmt.Sprintf(" The data as it was before the restore is in Backup %s/%s: create a RestoreJob naming it to go back.",
			o.job.Namespace, o.capture.rollback.BackupName)
	} else {
		msg += " No safety Backup was taken."
	}
	return msg
}

// sealed: this job found the cluster it re-created (not in a rollback)
// healthy and recorded so in its capture (captureKeySucceeded, with the
// cluster's UID), so its success is read from the driver's own record: no
// status write before the hand-back. The hand-back resumes the HelmRelease
// and releases the claim, the end (Succeeded, with the Outcome condition
// and the story Event) is written, and the capture, the staging claim and
// the finalizer are settled after it. The seal lasts as long as the
// capture, which is deleted only after the end is written; Flux may
// rewrite the cluster once the HelmRelease is resumed, which changes
// nothing. A capture of an earlier driver keeps that driver's seal, on the
// cluster and the HelmRelease; it is carried into the capture before any
// other step (legacySealOnly), so the resume that follows cannot lose it
// when Flux rewrites the cluster.
func sealed(o *observation) bool {
	if rollbackOf(o.job) != nil || o.capture == nil {
		return false
	}
	if o.capture.succeeded {
		return true
	}
	if !o.capture.legacy {
		return false
	}
	uid := string(o.job.UID)
	if o.hr != nil && o.hr.GetAnnotations()[backupsv1alpha1.RestoreSucceededAnnotation] == uid {
		return true
	}
	return o.cluster != nil && recreatedBy(o) && o.cluster.GetAnnotations()[backupsv1alpha1.RestoreSucceededAnnotation] == uid
}

// legacySealOnly: the restore is sealed, but only by an earlier driver's
// annotation (on the cluster it re-created, or on the HelmRelease, which
// that driver sealed with its resume), which is read for its captures
// alone. Such a driver may have been stopped after the seal and before the
// resume: once this one resumes the HelmRelease, Flux may rewrite the
// cluster and drop its annotations, and with them the seal, and a restore
// that no longer knows the cluster as its own would replace it. So the
// seal goes into the capture first (stateCarrySeal, one patch, as the seal
// of this driver's own restores); from then on it is read there.
func legacySealOnly(o *observation) bool {
	return o.capture != nil && o.capture.legacy && !o.capture.succeeded && sealed(o)
}

// sealedRecreated is the UID a seal records as the re-created cluster's:
// the live cluster's when it is this job's, else none (a legacy seal on the
// HelmRelease alone, the cluster rewritten).
func sealedRecreated(o *observation) types.UID {
	if o.cluster != nil && recreatedBy(o) {
		return o.cluster.UID
	}
	return ""
}

// sealedSuccess is the conclusion a sealed restore implies.
func sealedSuccess(o *observation) decision {
	// Said of the look that sealed it: every member was ready then.
	from, members := "", " and every member was ready"
	if c := o.cluster; c != nil && recreatedBy(o) {
		from = c.GetAnnotations()[backupsv1alpha1.RestoredFromAnnotation]
		if c.Spec.Replicas != nil {
			members = fmt.Sprintf(" and all %d members were ready", *c.Spec.Replicas)
		}
	}
	if o.capture != nil {
		src := o.capture.source
		to := ""
		if pin := o.capture.point; pin != nil {
			to = fmt.Sprintf(" and its changes replayed to %s", pin.Point)
		}
		return success(fmt.Sprintf("EtcdCluster %s was restored from Backup %s (s3://%s/%s)%s%s",
			clusterName, src.BackupName, src.Bucket, src.Key, to, members))
	}
	return success(fmt.Sprintf("EtcdCluster %s was restored from Backup %s%s", clusterName, from, members))
}

// decidedOutcome: the outcome is known, recorded (Outcome) or sealed.
func decidedOutcome(o *observation) bool {
	return outcomeOf(o.job) != nil || sealed(o)
}

// outcome is a decided result, read back from the Outcome condition.
type outcome struct {
	success bool
	reason  backupsv1alpha1.RestoreReason
	message string
}

func outcomeOf(job *backupsv1alpha1.RestoreJob) *outcome {
	c := meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.RestoreConditionOutcome)
	if c == nil {
		return nil
	}
	return &outcome{success: c.Status == metav1.ConditionTrue, reason: backupsv1alpha1.RestoreReason(c.Reason), message: c.Message}
}
