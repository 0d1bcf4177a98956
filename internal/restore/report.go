package restore

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// What a restore writes of its own status, and its Events: report writes
// the status a decision implies (or none, for a quiet step), writeStatus
// is the one guarded status write, event the one way to an Event.

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
	if meta.FindStatusCondition(before.Status.Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored) == nil &&
		meta.FindStatusCondition(o.job.Status.Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored) != nil {
		r.event(o, backupsv1alpha1.ReasonDryRunChangeIgnored, restoreoptions.IgnoredChange(restoreoptions.Restore), true)
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
		return capturedLive(o) && o.opts.BumpsRevision() && rollbackOf(o.job) == nil && !purged(o.job) &&
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

// tellDryRunKept emits, once per change, the Event of a dry run whose
// options no longer ask for one: it stays a dry run (decide ignores it),
// and its status is the rehearsal's.
func (r *Reconciler) tellDryRunKept(o *observation) {
	kind, ignored := restoreoptions.KindOf(o.job, restoreRecords(o))
	if kind == restoreoptions.DryRun && ignored && !o.job.Status.Phase.IsTerminal() && r.told.First(o.job.UID, o.job.Generation) {
		r.event(o, backupsv1alpha1.ReasonDryRunChangeIgnored, restoreoptions.IgnoredChange(kind), true)
	}
}

func readyReason(job *backupsv1alpha1.RestoreJob) string {
	for _, c := range job.Status.Conditions {
		if c.Type == backupsv1alpha1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}
