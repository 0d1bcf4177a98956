package rehearsal

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// A dry run starts in this order: its status says it runs (phase
// Running, Ready reason Rehearsing: what restoreoptions reads as a
// started dry run, and what a tenant cannot write), then this process
// starts its census (off the workers, liveCensus), then, once the census
// ended, it records what it read in its annotation (rehearsalrecord). The
// status write comes first and with an optimistic lock, so a reconcile
// that reads a stale RestoreJob fails it instead of counting again, and
// only the process that wrote it starts the census. A dry run that
// started but whose census this process does not hold (it restarted
// before the record was written) or whose record cannot be written ends
// with a clear refusal (ReasonRehearsalUnrecorded), whatever the
// installed CRD serves: each dry run counts the live cluster at most
// once. A record gone or altered while this process still holds the
// census is written again from it.

// started reports whether rj's status says its rehearsal started: from
// then on it holds a rehearsal slot until it ends (queue.go).
func started(rj *backupsv1alpha1.RestoreJob) bool {
	kind, ok := restoreoptions.StartedAs(rj, false)
	return ok && kind == restoreoptions.DryRun
}

// readRecord is rj's verified record; recorded is false when it has none
// the driver wrote. A started dry run's record is read live before it is
// believed missing: the cache may not show it yet.
func (r *Reconciler) readRecord(ctx context.Context, rj *backupsv1alpha1.RestoreJob) (rec rehearsalrecord.Record, recorded bool, err error) {
	log := logr.FromContextOrDiscard(ctx)
	rec, recorded, ignored, err := rehearsalrecord.Read(ctx, r.Keys, rj)
	if err != nil || recorded || !started(rj) {
		return rec, recorded, err
	}
	live := &backupsv1alpha1.RestoreJob{}
	if err := r.LiveReader.Get(ctx, client.ObjectKeyFromObject(rj), live); err != nil {
		return rec, false, fmt.Errorf("read RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	if live.UID == rj.UID {
		rec, recorded, ignored, err = rehearsalrecord.Read(ctx, r.Keys, live)
	}
	if ignored != "" {
		log.Info("ignoring the rehearsal record on the RestoreJob", "annotation", rehearsalrecord.Annotation, "why", ignored)
	}
	return rec, recorded, err
}

// writeRecord sets rj's annotation to rec, signed. The merge patch names
// only the annotation: no one else's write conflicts with it.
func (r *Reconciler) writeRecord(ctx context.Context, rj *backupsv1alpha1.RestoreJob, rec rehearsalrecord.Record) error {
	value, err := rehearsalrecord.Encode(ctx, r.Keys, rj, rec)
	if err != nil {
		return err
	}
	base := rj.DeepCopy()
	if rj.Annotations == nil {
		rj.Annotations = map[string]string{}
	}
	rj.Annotations[rehearsalrecord.Annotation] = value
	if err := r.Client.Patch(ctx, rj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("write the rehearsal record on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	return nil
}

// start takes a dry run with no record of the driver's to its record:
// it marks the rehearsal Running and starts the census (the revision the
// Job's floor is built from, and what the report compares with) when it
// has not started, waits for the census, and records what it read.
func (r *Reconciler) start(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup, pt *pointRun) (ctrl.Result, error) {
	claimed := false
	if !started(rj) {
		if why, err := r.admit(ctx, rj); err != nil {
			return ctrl.Result{}, err
		} else if why != "" {
			return ctrl.Result{}, r.queue(ctx, rj, why)
		}
		if r.Census != nil && r.reads().Busy(rj.Namespace) {
			// One census of a namespace's etcd at a time: start when
			// the one running ended.
			return ctrl.Result{RequeueAfter: censusPoll}, nil
		}
		if err := r.claim(ctx, rj, pt); err != nil {
			return ctrl.Result{}, err
		}
		claimed = true
	}
	c, unread, st := r.liveCensus(rj, claimed)
	switch st {
	case censusPending:
		return ctrl.Result{RequeueAfter: censusPoll}, nil
	case censusLost:
		return ctrl.Result{}, r.fail(ctx, rj, b, nil, refuse(backupsv1alpha1.ReasonRehearsalUnrecorded,
			"the record of this rehearsal's start (annotation %s) is missing or is not the driver's, and the driver no longer holds "+
				"what it counted, so the Job's revision floor is unknown; the live cluster is not counted twice: create the dry run again",
			rehearsalrecord.Annotation))
	}
	rec := rehearsalrecord.Record{RevisionBefore: c.Revision, KeysBefore: c.Now.Keys, LiveUnread: unread}
	if err := r.writeRecord(ctx, rj, rec); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "the rehearsal's start could not be recorded")
		return ctrl.Result{}, r.fail(ctx, rj, b, nil, refuse(backupsv1alpha1.ReasonRehearsalUnrecorded,
			"the rehearsal's start could not be recorded on the RestoreJob (annotation %s: %v); the live cluster is not counted twice: "+
				"create the dry run again", rehearsalrecord.Annotation, err))
	}
	msg := "rehearsing " + describe(rj, pt) + " in a Job of its own; nothing live is changed"
	if unread != "" {
		msg += "; the live cluster could not be read (" + unread + "), so the revision is raised by etcd's blind bump"
	}
	r.event(rj, backupsv1alpha1.ReasonRehearsing, msg, false)
	return ctrl.Result{}, nil
}

// claim marks the rehearsal Running: from then on the live cluster is
// not counted again.
func (r *Reconciler) claim(ctx context.Context, rj *backupsv1alpha1.RestoreJob, pt *pointRun) error {
	base := rj.DeepCopy()
	now := metav1.NewTime(r.now())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	rj.Status.StartedAt = &now
	msg := "rehearsing " + describe(rj, pt) + " in a Job of its own; nothing live is changed"
	rj.Status.Message = msg
	meta.SetStatusCondition(&rj.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: string(backupsv1alpha1.ReasonRehearsing), Message: textlimit.Message(msg), ObservedGeneration: rj.Generation})
	if err := r.Client.Status().Patch(ctx, rj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the rehearsal's start on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	return nil
}

// jobName is the rehearsal Job's name for rj: keyed with the active
// provenance key (tenantjobs.KeyedName), which the tenant does not hold,
// so no one can create a Job of that name before the driver does, and
// the driver finds its Job again by name after a restart.
func (r *Reconciler) jobName(ctx context.Context, rj *backupsv1alpha1.RestoreJob) (string, error) {
	_, key, err := r.Keys.Active(ctx)
	if err != nil {
		return "", err
	}
	return tenantjobs.KeyedName("etcd-rehearsal-", key, "etcd-backup-driver rehearsal job", rj.UID), nil
}

// findJob reads the Job named as want, live (nil: there is none). Whether
// it is the driver's is the caller's question (tenantjobs.Mine).
func (r *Reconciler) findJob(ctx context.Context, want *batchv1.Job) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	if err := r.LiveReader.Get(ctx, client.ObjectKeyFromObject(want), job); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read rehearsal Job %s/%s: %w", want.Namespace, want.Name, err)
	}
	return job, nil
}
