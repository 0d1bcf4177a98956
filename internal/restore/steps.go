package restore

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// decideClaimed walks the destructive sequence for a job that took the claim.
func decideClaimed(o *observation, defaultTimeout time.Duration) decision {
	if o.holder == nil || !o.holder.HeldBy(o.job) {
		if o.holder == nil && o.capture == nil {
			// Lost before anything was captured: claim again.
			return decision{state: stateAcquireClaim, reason: backupsv1alpha1.ReasonClaimAcquired,
				message: "re-claiming EtcdCluster " + o.target.String()}
		}
		return failure(o, backupsv1alpha1.ReasonClaimLost, "the restore claim on EtcdCluster "+o.target.String()+
			" was removed or taken over while this restore held it")
	}
	if rb := rollbackOf(o.job); rb != nil {
		return decideRollback(o, rb, defaultTimeout)
	}
	deadline := startedAt(o).Add(o.opts.Timeout(defaultTimeout))
	d := decideStep(o)
	if d.state == stateConclude || d.state == stateStartRollback || d.state == stateRestoreProgressDeadline {
		// A healthy cluster is not given up on at the deadline.
		return d
	}
	if !o.now.Before(deadline) {
		if o.snapshot != nil && o.safetyBackup == nil && !o.snapshot.Ended() && !safetyAbandoned(o) {
			// A started snapshot lands in S3 either way: record it first
			// (decideSafety gives up on it at its own bound).
			d.message = "the deadline passed; recording the running safety snapshot before giving up: " + d.message
			return d
		}
		what := fmt.Sprintf("the restore did not finish within %s (it was at step %s: %s); raise spec.options.restoreTimeoutSeconds or the --restore-deadline flag",
			o.opts.Timeout(defaultTimeout), d.state, d.message)
		if committed(o) {
			return failAfterPurge(o, backupsv1alpha1.ReasonDeadlineExceeded, what)
		}
		return failure(o, backupsv1alpha1.ReasonDeadlineExceeded, what)
	}
	if d.deadline.IsZero() || deadline.Before(d.deadline) {
		d.deadline = deadline
	}
	return d
}

// decideStep picks the next step of a restore that holds its claim.
func decideStep(o *observation) decision {
	if o.capture == nil {
		if o.captureErr != nil {
			return failure(o, backupsv1alpha1.ReasonCaptureUnreadable, "the capture ConfigMap cannot be used: "+o.captureErr.Error())
		}
		// Until the capture freezes the source, the Backup is judged again
		// at every step: an edit after the claim is refused as before it.
		if o.backup == nil {
			return failure(o, backupsv1alpha1.ReasonBackupNotFound, fmt.Sprintf(
				"Backup %s/%s disappeared before the cluster was captured", o.job.Namespace, o.job.Spec.BackupRef.Name))
		}
		if d, done := decidePoint(o, true); !done {
			return d
		}
		if reason, msg := preflight(o); reason != "" {
			return failure(o, reason, msg)
		}
		if d, done := decideVerification(o); !done {
			return d
		}
		if d, done := decidePinned(o); !done {
			return d
		}
		if d, done := decideFence(o); !done {
			return d
		}
		if o.cluster == nil {
			return decideAbsent(o)
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
	if o.capture.from != "" && o.opts.BumpsRevision() && !purged(o.job) {
		// Restoring into an absent cluster: nothing to purge, the staging
		// comes first all the same.
		if d, done := decideStaging(o); !done {
			return d
		}
	}
	if o.pvcs > 0 {
		return waitPVCs(o)
	}
	src := o.capture.source
	if o.opts.BumpsRevision() {
		return decision{state: stateRecreate, reason: backupsv1alpha1.ReasonClusterPurged, message: fmt.Sprintf(
			"re-creating EtcdCluster %s from s3://%s/%s as staged on PersistentVolumeClaim %s", clusterName, src.Bucket, src.Key, stagingSource(o).ClaimName)}
	}
	return decision{state: stateRecreate, reason: backupsv1alpha1.ReasonClusterPurged, message: fmt.Sprintf(
		"re-creating EtcdCluster %s from s3://%s/%s", clusterName, src.Bucket, src.Key)}
}

func decideLiveCluster(o *observation) decision {
	if src := o.capture.source; recreatedBy(o) && carriesSource(o, src) {
		if why := bootstrapFailed(o.cluster); why != "" {
			return failAfterPurge(o, backupsv1alpha1.ReasonBootstrapFailed, "the etcd-operator could not bootstrap the re-created EtcdCluster from the Backup: "+why)
		}
		if healthy(o.cluster) {
			if !progressDeadlineRestored(o) || !sealed(o) {
				// The progress deadline goes back, then the success is
				// sealed in the capture (one step).
				return decision{state: stateRestoreProgressDeadline}
			}
			return sealedSuccess(o)
		}
		return decision{state: stateWaitHealthy, reason: backupsv1alpha1.ReasonEtcdClusterBootstrapping,
			message: "waiting for the re-created EtcdCluster to be Available with every member ready (" + memberSummary(o.cluster) + ")"}
	}
	if recreatedBy(o) || purged(o.job) || replaced(o) {
		// Not the cluster this restore created: the HelmRelease's is
		// rolled over, anything else is left alone.
		what := "appeared after the old one was purged, without this restore's source"
		if recreatedBy(o) {
			what = "is marked as re-created by this RestoreJob but does not carry its restore source"
		}
		if helmOwned(o) {
			return rollOver(o, what)
		}
		return failure(o, backupsv1alpha1.ReasonClusterReplaced, fmt.Sprintf("EtcdCluster %s %s, and it is not HelmRelease %s's; it was left untouched",
			clusterName, what, o.app))
	}
	if !o.cluster.GetDeletionTimestamp().IsZero() {
		return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonPurgingCluster, message: purgeMessage}
	}
	if len(o.inflight) > 0 {
		return waitSnapshots(o)
	}
	if o.opts.BumpsRevision() {
		if d, done := decideStaging(o); !done {
			return d
		}
		if d, done := decideRecheck(o); !done {
			return d
		}
	}
	return decision{state: stateDeleteCluster, reason: backupsv1alpha1.ReasonPurgingCluster, message: purgeMessage}
}

// purgeMessage is the one message of the purge (delete, wait for the
// cluster, wait for its volumes): one status write for the whole phase.
var purgeMessage = fmt.Sprintf("deleting EtcdCluster %s and waiting until it and its PVCs (labelled %s=%s) are gone",
	clusterName, instanceLabel, clusterName)

func waitPVCs(o *observation) decision {
	return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonPurgingCluster, message: purgeMessage}
}

// waitSnapshots holds the restore while a BackupJob that started before the
// claim still streams a snapshot of the cluster: deleting the cluster under
// it would fail that backup for no reason.
func waitSnapshots(o *observation) decision {
	return decision{state: stateWaitSnapshots, reason: backupsv1alpha1.ReasonWaitingForSnapshots, message: fmt.Sprintf(
		"waiting for running EtcdSnapshot(s) %v of EtcdCluster %s to finish before touching it", o.inflight, clusterName)}
}

// carriesSource: the cluster bootstraps from this restore's source, the
// staging claim's file when the restore staged it.
func carriesSource(o *observation, src restoreSource) bool {
	b := o.cluster.Spec.Bootstrap
	if b == nil || b.Restore == nil {
		return false
	}
	if p := b.Restore.Source.PVC; p != nil {
		want := stagingSource(o)
		return o.opts.BumpsRevision() && p.ClaimName == want.ClaimName && p.SubPath == want.SubPath
	}
	s3 := b.Restore.Source.S3
	return s3 != nil && !o.opts.BumpsRevision() && s3.Key == src.Key && s3.Bucket == src.Bucket && s3.Endpoint == src.Endpoint
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

// bootstrapFailed says why the operator gave up on the cluster (final:
// BootstrapFailed, or DeadlineExceeded before it ever got a cluster ID),
// or "".
func bootstrapFailed(c *etcdv1alpha2.EtcdCluster) string {
	cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
	if cond == nil {
		return ""
	}
	switch {
	case cond.Reason == etcdv1alpha2.ReasonBootstrapFailed,
		cond.Reason == reasonOperatorDeadlineExceeded && c.Status.ClusterID == "":
		return cond.Reason + ": " + cond.Message
	}
	return ""
}

// reasonOperatorDeadlineExceeded is the operator's reason when the progress
// deadline passes.
const reasonOperatorDeadlineExceeded = "DeadlineExceeded"

func available(o *observation) bool {
	return o.cluster != nil && meta.IsStatusConditionTrue(o.cluster.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
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
