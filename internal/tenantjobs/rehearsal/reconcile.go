package rehearsal

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Reconcile takes a dry-run RestoreJob one step: preflight, count the
// live cluster and record that the rehearsal started, create its Job,
// and, once the Job ended, report and record the outcome.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	rj := &backupsv1alpha1.RestoreJob{}
	if err := r.Reader.Get(ctx, req.NamespacedName, rj); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted mid-run (a dry run holds no finalizer): what this
			// process kept for it goes too.
			r.forgetName(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	uid := memoKey(rj)
	if !restoreoptions.IsDryRun(rj) || rj.Status.Phase.IsTerminal() || !rj.DeletionTimestamp.IsZero() {
		r.forget(rj)
		return ctrl.Result{}, nil
	}
	b := &backupsv1alpha1.Backup{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: rj.Spec.BackupRef.Name}, b); apierrors.IsNotFound(err) {
		// Another driver's dry run looks the same until its Backup shows
		// whose it is: wait, then fail as a restore does.
		if left := rj.CreationTimestamp.Add(BackupWait).Sub(r.now()); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{}, r.fail(ctx, rj, nil, refuse(backupsv1alpha1.ReasonBackupNotFound,
			"Backup %s/%s did not appear within %s; create the RestoreJob again naming an existing Backup", rj.Namespace, rj.Spec.BackupRef.Name, BackupWait))
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !strategyv1alpha1.IsEtcd(b.Spec.StrategyRef) {
		return ctrl.Result{}, nil
	}
	spec, ref, err := r.preflight(ctx, rj, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ref != nil {
		return ctrl.Result{}, r.fail(ctx, rj, b, ref)
	}

	if rj.Status.Rehearsal == nil {
		if why, err := r.admit(ctx, rj); err != nil || why != "" {
			if err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, r.queue(ctx, rj, why)
		}
		// Count the live cluster first: its revision is the Job's floor,
		// recorded in the status (which the tenant cannot write) before
		// the Job exists, so a restarted driver builds the same Job. The
		// census runs off the workers; its end wakes the RestoreJob.
		c, unread, counted := r.liveCensus(rj, liverevision.ForRehearsal)
		if !counted {
			return ctrl.Result{RequeueAfter: censusPoll}, nil
		}
		return ctrl.Result{}, r.start(ctx, rj, c, unread)
	}
	spec.LiveRevision = rj.Status.Rehearsal.RevisionBefore
	want := Build(spec, ownerRef(rj))
	job, err := r.findJob(ctx, rj, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if job == nil {
		if made := r.madeJob(uid); made != nil {
			gone, err := r.jobGone(ctx, made)
			if err != nil || !gone {
				// Created a moment ago: the live list missed it only if
				// the API server is behind. Look again.
				return ctrl.Result{RequeueAfter: time.Second}, err
			}
			return ctrl.Result{}, r.fail(ctx, rj, b, refuse(backupsv1alpha1.ReasonRehearsalFailed,
				"the rehearsal Job %s was deleted before it ended; create the dry run again", made.Name))
		}
		spec.JobName = NewName()
		want = Build(spec, ownerRef(rj))
		if err := r.Client.Create(ctx, want); err != nil {
			return ctrl.Result{}, fmt.Errorf("create rehearsal Job %s/%s: %w", want.Namespace, want.Name, err)
		}
		r.keepJob(uid, want)
		log.Info("rehearsal Job created", "job", want.Name)
		return ctrl.Result{}, nil
	}
	out, jobMsg := tenantjobs.OutcomeOf(job)
	if out == tenantjobs.Running {
		// The Job's own events wake the RestoreJob.
		return ctrl.Result{}, nil
	}
	var rep step.Report
	reportErr := tenantjobs.ReadReport(ctx, r.LiveReader, job, ContainerName, &rep)
	if out == tenantjobs.Succeeded && reportErr == nil && rep.Outcome == step.OutcomeRehearsed {
		return ctrl.Result{}, r.succeed(ctx, rj, b, rep)
	}
	msg := "the rehearsal Job " + job.Name + " failed"
	switch {
	case reportErr == nil && rep.Outcome != step.OutcomeRehearsed:
		msg += ": " + string(rep.Reason) + ": " + rep.Message
	case reportErr != nil && jobMsg != "":
		msg += " (" + jobMsg + "); its Pod left no readable report: " + reportErr.Error()
	case reportErr != nil:
		msg += "; its Pod left no readable report: " + reportErr.Error()
	default:
		msg += " (" + jobMsg + ")"
	}
	return ctrl.Result{}, r.fail(ctx, rj, b, refuse(backupsv1alpha1.ReasonRehearsalFailed, "%s", msg))
}

// jobGone reports whether the Job this process created is gone (deleted
// by someone, or replaced by another of the same name).
func (r *Reconciler) jobGone(ctx context.Context, made *batchv1.Job) (bool, error) {
	var j batchv1.Job
	err := r.LiveReader.Get(ctx, client.ObjectKeyFromObject(made), &j)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read rehearsal Job %s/%s: %w", made.Namespace, made.Name, err)
	}
	return made.UID != "" && j.UID != made.UID, nil
}

// liveCensus is the dry run's census for purpose p: counted once it
// ended, with unread what a tenant may read of why the live cluster could
// not be counted ("" when it was: a census past liverevision's bounds is
// unread too, never a count). A census not yet taken is started off the
// workers (its end wakes the RestoreJob); it is kept until the dry run
// ends (census), so it is taken once.
func (r *Reconciler) liveCensus(rj *backupsv1alpha1.RestoreJob, p liverevision.Purpose) (c liverevision.Census, unread string, counted bool) {
	if r.Census == nil {
		return liverevision.Census{}, "the driver has no access to tenant etcd clusters", true
	}
	k := liverevision.Key{Job: rj.UID, Purpose: p}
	switch st, res := r.reads().Look(k); st {
	case liverevision.NotStarted:
		// One census of a namespace's etcd at a time: a tenant's dry runs
		// take one of the CensusSlots, never all. The one running wakes
		// only its own dry run; this one looks again after censusPoll.
		if !r.reads().Busy(rj.Namespace) {
			r.reads().Start(k, client.ObjectKeyFromObject(rj), rj.Namespace)
		}
		return liverevision.Census{}, "", false
	case liverevision.Running:
		return liverevision.Census{}, "", false
	default:
		if res.Err != nil {
			return liverevision.Census{}, liverevision.TenantMessage(res.Err), true
		}
		return res.Value, "", true
	}
}

// census is the dry run's census as its start took it; ok is false when
// this process holds none (it restarted since the start).
func (r *Reconciler) census(rj *backupsv1alpha1.RestoreJob) (c liverevision.Census, unread string, ok bool) {
	st, res := r.reads().Look(liverevision.Key{Job: rj.UID, Purpose: liverevision.ForRehearsal})
	switch {
	case st != liverevision.Done:
		return liverevision.Census{}, "", false
	case res.Err != nil:
		return liverevision.Census{}, liverevision.TenantMessage(res.Err), true
	}
	return res.Value, "", true
}

// ownerRef makes the Job the RestoreJob's: deleting the RestoreJob
// deletes it.
func ownerRef(rj *backupsv1alpha1.RestoreJob) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: rj.Name, UID: rj.UID}
}

// findJob is the RestoreJob's rehearsal Job, read live: the Job the
// driver built as want (tenantjobs.Mine: its labels, its controller
// reference and exactly its Pod template).
// A look-alike is never read (it is logged once per reconcile).
func (r *Reconciler) findJob(ctx context.Context, rj *backupsv1alpha1.RestoreJob, want *batchv1.Job) (*batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := r.LiveReader.List(ctx, &jobs, client.InNamespace(rj.Namespace),
		client.MatchingLabels{backupsv1alpha1.RehearsalLabel: string(rj.UID)}); err != nil {
		return nil, fmt.Errorf("list rehearsal Jobs in %s: %w", rj.Namespace, err)
	}
	var found *batchv1.Job
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if !tenantjobs.Mine(j, want) {
			logr.FromContextOrDiscard(ctx).Info("ignoring a Job labelled as this RestoreJob's rehearsal that the driver did not build", "job", j.Name)
			continue
		}
		if found == nil || j.CreationTimestamp.Before(&found.CreationTimestamp) {
			found = j
		}
	}
	return found, nil
}

// start records that the rehearsal runs: Running, and the live counts
// now (the revision the Job's floor is built from).
func (r *Reconciler) start(ctx context.Context, rj *backupsv1alpha1.RestoreJob, c liverevision.Census, unread string) error {
	base := rj.DeepCopy()
	now := metav1.NewTime(r.now())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	rj.Status.StartedAt = &now
	rj.Status.Rehearsal = &driverv1alpha1.RehearsalReport{RevisionBefore: c.Revision}
	rj.Status.Rehearsal.KeysBefore = c.Now.Keys
	msg := "rehearsing Backup " + rj.Spec.BackupRef.Name + " in a Job of its own; nothing live is changed"
	if unread != "" {
		msg += "; the live cluster could not be read (" + unread + "), so the revision is raised by etcd's blind bump"
	}
	rj.Status.Message = msg
	meta.SetStatusCondition(&rj.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: string(backupsv1alpha1.ReasonRehearsing), Message: textlimit.Message(msg), ObservedGeneration: rj.Generation})
	if err := r.Client.Status().Patch(ctx, rj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the rehearsal's start on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	r.event(rj, backupsv1alpha1.ReasonRehearsing, msg, false)
	return nil
}

// succeed reports a rehearsal that booted and read back, compared with
// the census its start took.
func (r *Reconciler) succeed(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup, rep step.Report) error {
	c, unread, ok := r.census(rj)
	before := rj.Status.Rehearsal.RevisionBefore
	var now *driverv1alpha1.BackupManifest
	switch {
	case before == 0:
		if unread == "" {
			unread = "it was not readable when the rehearsal started"
		}
	case !ok:
		// A driver restarted since the start lost its counts, and does
		// not count the live cluster a second time.
		unread = "the live counts were lost with a driver restart, and the live cluster is not counted twice"
	default:
		now = &c.Now
	}
	report := newReport(now, before, rep)
	msg := summary(report, unread)
	return r.finish(ctx, rj, b, true, backupsv1alpha1.ReasonRehearsed, msg, &report)
}

// fail ends a dry run: the refusal's reason and message, a Warning Event,
// and the Backup's record when it is the driver's.
func (r *Reconciler) fail(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup, ref *refusal) error {
	return r.finish(ctx, rj, b, false, ref.reason, ref.message, rj.Status.Rehearsal)
}

// finish records the outcome on the Backup (status.underlyingResources.lastRehearsal) and
// then ends the RestoreJob; a crash between the two records it again.
func (r *Reconciler) finish(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup, ok bool,
	reason backupsv1alpha1.RestoreReason, msg string, report *driverv1alpha1.RehearsalReport) error {
	msg = textlimit.Cut(msg, 1024)
	now := metav1.NewTime(r.now())
	if b != nil && strategyv1alpha1.IsEtcd(b.Spec.StrategyRef) {
		rec := &driverv1alpha1.RehearsalRecord{RestoreJob: rj.Name, Succeeded: ok, CompletedAt: now, Message: msg}
		if err := r.recordOnBackup(ctx, b, rec); err != nil {
			return err
		}
	}
	base := rj.DeepCopy()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	if ok {
		rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	}
	if rj.Status.StartedAt == nil {
		rj.Status.StartedAt = &now
	}
	rj.Status.CompletedAt = &now
	rj.Status.Message = msg
	rj.Status.Rehearsal = report
	meta.SetStatusCondition(&rj.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: condition(ok),
		Reason: string(reason), Message: textlimit.Message(msg), ObservedGeneration: rj.Generation})
	if err := r.Client.Status().Patch(ctx, rj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the rehearsal's end on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	// What this process keeps of the dry run (its census, its Job) is
	// forgotten once a reconcile reads it ended: one from a cache that
	// does not show the end yet still finds it, and counts nothing again.
	r.event(rj, reason, msg, !ok)
	return nil
}

func condition(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// recordOnBackup records rec as the Backup's last rehearsal in its
// status.underlyingResources (artifact.SetLastRehearsal; the Backup has no
// status subresource), read live and patched with an optimistic lock:
// nothing else of it (its spec, its signature, its other records) changes.
func (r *Reconciler) recordOnBackup(ctx context.Context, b *backupsv1alpha1.Backup, rec *driverv1alpha1.RehearsalRecord) error {
	live := &backupsv1alpha1.Backup{}
	if err := r.LiveReader.Get(ctx, client.ObjectKeyFromObject(b), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	if live.UID != b.UID {
		return nil
	}
	base := live.DeepCopy()
	if err := artifact.SetLastRehearsal(live, rec); err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the rehearsal on Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

func (r *Reconciler) event(rj *backupsv1alpha1.RestoreJob, reason backupsv1alpha1.RestoreReason, msg string, warning bool) {
	if r.Recorder == nil {
		return
	}
	kind := corev1.EventTypeNormal
	if warning {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(rj, nil, kind, string(reason), "Rehearse", "%s", textlimit.Note(msg))
}
