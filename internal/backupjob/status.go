package backupjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// deadline is when the waits of a job that started at start run out (nil:
// it starts now).
func (r *Reconciler) deadline(start *metav1.Time) time.Time {
	t := r.Clock.Now()
	if start != nil {
		t = start.Time
	}
	return t.Add(r.Deadline)
}

func (r *Reconciler) pastDeadline(job *backupsv1alpha1.BackupJob) bool {
	return r.pastFrom(job.Status.StartedAt)
}

func (r *Reconciler) pastFrom(start *metav1.Time) bool {
	return start != nil && !r.Clock.Now().Before(r.deadline(start))
}

// startOf is when job started: as recorded, else when its snapshot was
// created (a job that went straight to its snapshot wrote no status).
func startOf(job *backupsv1alpha1.BackupJob, o outcome) *metav1.Time {
	if job.Status.StartedAt != nil || o.started == nil || o.started.IsZero() {
		return job.Status.StartedAt
	}
	return o.started
}

// apply records an outcome: at most one status patch, made only when the
// status changes, guarded by the resourceVersion so a stale read can never
// overwrite newer status. Waits past the deadline become failures; waits
// within it requeue at the deadline (the only timer; progress comes from
// watches). A job that went straight to its snapshot writes no status
// until the snapshot ends (or the deadline passes): its Running state is
// the snapshot itself, and the one write is its end.
func (r *Reconciler) apply(ctx context.Context, job *backupsv1alpha1.BackupJob, o outcome) (ctrl.Result, error) {
	if apierrors.IsConflict(o.err) {
		// A write (the snapshot's hand-over, say) met a newer version of
		// its object: decide again on it, without a reconcile error.
		log.FromContext(ctx).V(1).Info("an object changed since it was read; deciding again", "reason", o.err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if o.err != nil {
		return ctrl.Result{}, o.err
	}
	now := r.Clock.Now()
	start := startOf(job, o)
	past := r.pastFrom(start)
	switch {
	case o.terminal():
	case o.following && past:
		o.message += fmt.Sprintf(" (past the %s deadline: the snapshot is followed until the operator ends it)", r.Deadline)
	case o.following && job.Status.Phase == "":
		// Nothing written yet: the snapshot's watch wakes the job at
		// its end, the deadline timer before then.
		return ctrl.Result{RequeueAfter: r.deadline(start).Sub(now)}, nil
	case past:
		o = failed(backupsv1alpha1.BackupReasonDeadlineExceeded, "gave up after %s: %s", r.Deadline, o.message)
	}
	o.message = textlimit.Message(o.message)

	next := job.Status.DeepCopy()
	if next.StartedAt == nil {
		next.StartedAt = start
		if start == nil {
			next.StartedAt = &metav1.Time{Time: now}
		}
	}
	next.Phase, next.Message = o.phase, o.message
	if o.backupRef != "" {
		next.BackupRef = &backupsv1alpha1.LocalObjectReference{Name: o.backupRef}
	}
	cond := metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: o.reason,
		Message: o.message, ObservedGeneration: job.Generation}
	if o.phase == backupsv1alpha1.BackupJobPhaseSucceeded {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	if o.terminal() && next.CompletedAt == nil {
		next.CompletedAt = &metav1.Time{Time: now}
	}

	if !equality.Semantic.DeepEqual(&job.Status, next) {
		prev := job.Status.DeepCopy()
		patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
		job.Status = *next
		if err := r.Status().Patch(ctx, job, patch); apierrors.IsConflict(err) {
			// The job changed since the cache gave it to us, usually by
			// our own last status write that the cache has not shown
			// yet. Every step is idempotent: decide again on the newer
			// object, without reporting a reconcile error.
			log.FromContext(ctx).V(1).Info("BackupJob changed since it was read; deciding again", "reason", err.Error())
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("write BackupJob status: %w", err)
		}
		r.transitioned(ctx, job, prev, o)
	}
	if o.terminal() || o.following && past {
		// Watches on the snapshot wake a following job from here on.
		return ctrl.Result{}, nil
	}
	// Wake at the deadline: a wait then fails, a followed snapshot says
	// it is past it.
	wake := r.deadline(job.Status.StartedAt).Sub(now)
	if o.recheck > 0 && o.recheck < wake {
		wake = o.recheck
	}
	return ctrl.Result{RequeueAfter: wake}, nil
}

// conflictRetry is how soon a job whose status write met a newer version
// is looked at again: long enough for the cache to catch up on a write
// that has already happened.
const conflictRetry = 100 * time.Millisecond

// transitioned logs a status change and, when the job ends, counts it in
// the metrics; a job that failed gets a Warning Event. A success has no
// Event: the Ready condition says it, with the Backup it recorded (one
// Normal Event per tenant per scheduled backup was most of the Events a
// platform's driver wrote, and told nothing the status does not).
func (r *Reconciler) transitioned(ctx context.Context, job *backupsv1alpha1.BackupJob, prev *backupsv1alpha1.BackupJobStatus, o outcome) {
	prevReason := ""
	if c := meta.FindStatusCondition(prev.Conditions, backupsv1alpha1.ConditionReady); c != nil {
		prevReason = c.Reason
	}
	if prevReason == o.reason && prev.Phase == o.phase {
		return // same state, refreshed message
	}
	log.FromContext(ctx).Info("BackupJob transition", "phase", o.phase, "reason", o.reason, "message", o.message)
	if !o.terminal() {
		// The Ready condition tells each step; the Event tells the end.
		return
	}
	if o.phase == backupsv1alpha1.BackupJobPhaseFailed {
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, o.reason, string(o.phase), "%s", textlimit.Note(o.message))
	}
	result := "failed"
	if o.phase == backupsv1alpha1.BackupJobPhaseSucceeded {
		result = "succeeded"
	}
	backupsTotal.WithLabelValues(result, o.reason).Inc()
	backupDuration.WithLabelValues(result).Observe(job.Status.CompletedAt.Sub(job.Status.StartedAt.Time).Seconds())
}
