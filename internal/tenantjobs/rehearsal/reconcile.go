package rehearsal

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		return ctrl.Result{}, r.fail(ctx, rj, nil, nil, refuse(backupsv1alpha1.ReasonBackupNotFound,
			"Backup %s/%s did not appear within %s; create the RestoreJob again naming an existing Backup", rj.Namespace, rj.Spec.BackupRef.Name, BackupWait))
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !strategyv1alpha1.IsEtcd(b.Spec.StrategyRef) {
		return ctrl.Result{}, nil
	}
	pt, ref, err := r.pointOf(ctx, rj, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ref != nil {
		// Nothing was rehearsed: no Backup records it.
		return ctrl.Result{}, r.fail(ctx, rj, nil, nil, ref)
	}
	if pt != nil {
		// The base is what is rehearsed, and what records it.
		b = pt.res.Base
	}
	spec, ref, err := r.preflight(ctx, rj, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ref != nil {
		return ctrl.Result{}, r.fail(ctx, rj, b, nil, ref)
	}
	if pt != nil && !pt.res.Pinned {
		return ctrl.Result{}, r.pin(ctx, rj, pt)
	}

	rec, recorded, err := r.readRecord(ctx, rj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !recorded {
		return r.start(ctx, rj, b, pt)
	}
	spec.LiveRevision = rec.RevisionBefore
	if pt != nil {
		spec.Point = &pt.point
	}
	made := r.madeJob(uid)
	if made != nil {
		// The Job this process made keeps its name across a key rotation.
		spec.JobName = made.Name
	} else if spec.JobName, err = r.jobName(ctx, rj); err != nil {
		return ctrl.Result{}, err
	}
	want := Build(spec, ownerRef(rj))
	job, err := r.findJob(ctx, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case job != nil && (!tenantjobs.Mine(job, want) || made != nil && made.UID != "" && job.UID != made.UID):
		return ctrl.Result{}, r.fail(ctx, rj, b, &rec, refuse(backupsv1alpha1.ReasonRehearsalFailed,
			"the Job %s is not the rehearsal Job the driver built (it was changed or replaced); create the dry run again", job.Name))
	case job == nil && made != nil:
		return ctrl.Result{}, r.fail(ctx, rj, b, &rec, refuse(backupsv1alpha1.ReasonRehearsalFailed,
			"the rehearsal Job %s was deleted before it ended; create the dry run again", made.Name))
	case job == nil:
		if err := r.Client.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			// Made by this driver before a restart: read it next time.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		} else if err != nil {
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
		return ctrl.Result{}, r.succeed(ctx, rj, b, rec, rep, pt)
	}
	msg := "the rehearsal Job " + job.Name + " failed"
	if pt != nil {
		msg = "the rehearsal Job " + job.Name + " of " + describe(rj, pt) + " failed"
	}
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
	return ctrl.Result{}, r.fail(ctx, rj, b, &rec, refuse(backupsv1alpha1.ReasonRehearsalFailed, "%s", msg))
}

// What liveCensus found of a dry run's census.
type censusState int

const (
	// censusCounted: the census ended (unread says why it counted
	// nothing, if it did not).
	censusCounted censusState = iota
	// censusPending: it runs; its end wakes the RestoreJob.
	censusPending
	// censusLost: this process holds none and may not start one (the
	// dry run started before a restart).
	censusLost
)

// liveCensus is the dry run's census, with unread what a tenant may read
// of why the live cluster could not be counted ("" when it was: a census
// past liverevision's bounds is unread too, never a count). A census not
// yet taken is started off the workers only when start (the process that
// just marked the dry run started) says so; it is kept until the dry run
// ends (census), so it is taken once. One census of a namespace's etcd
// runs at a time (start waits for Busy): a tenant's dry runs take one of
// the CensusSlots, never all.
func (r *Reconciler) liveCensus(rj *backupsv1alpha1.RestoreJob, start bool) (c liverevision.Census, unread string, st censusState) {
	if r.Census == nil {
		return liverevision.Census{}, "the driver has no access to tenant etcd clusters", censusCounted
	}
	k := liverevision.Key{Job: rj.UID, Purpose: liverevision.ForRehearsal}
	switch state, res := r.reads().Look(k); state {
	case liverevision.NotStarted:
		if !start {
			return liverevision.Census{}, "", censusLost
		}
		r.reads().Start(k, client.ObjectKeyFromObject(rj), rj.Namespace)
		return liverevision.Census{}, "", censusPending
	case liverevision.Running:
		return liverevision.Census{}, "", censusPending
	default:
		if res.Err != nil {
			return liverevision.Census{}, liverevision.TenantMessage(res.Err), censusCounted
		}
		return res.Value, "", censusCounted
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
