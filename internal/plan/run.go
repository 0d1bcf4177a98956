package plan

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// runDue starts or skips the runs that are due at now and returns the next
// run time (zero when the schedule never fires again). It records what it
// did in the reconcile's record and conditions; the caller writes them.
func (r *Reconciler) runDue(ctx context.Context, w *work, obs *observed, sched cronschedule.Schedule, now time.Time) (time.Time, error) {
	recoverLastSchedule(&w.rec, obs)
	deadline := w.policy.StartingDeadline
	runs := cronschedule.DueRuns(sched, lastConsidered(w.plan, &w.rec, obs), now, deadline)

	if w.policy.Suspend {
		w.rec.NextScheduleTime = nil
		// Runs that fall while suspended are accounted for as they pass,
		// so resuming never starts a run that was due during suspension.
		skipped := runs.Missed + runs.Superseded
		last := runs.LastSkipped
		if !runs.Due.IsZero() {
			skipped++
			last = runs.Due
		}
		if skipped > 0 {
			r.skip(w, backupsv1alpha1.PlanReasonSuspended, skipped, last,
				fmt.Sprintf("skipped %s: the Plan is suspended", countRuns(skipped, runs.Truncated)))
		}
		return runs.Next, nil
	}
	w.rec.NextScheduleTime = timePtr(runs.Next)

	if n := runs.Missed + runs.Superseded; n > 0 {
		r.skip(w, backupsv1alpha1.PlanReasonMissedStartingDeadline, n, runs.LastSkipped,
			fmt.Sprintf("skipped %s that could not start within the starting deadline of %s (the newest skipped was due at %s); only the newest due run starts",
				countRuns(n, runs.Truncated), deadline, runs.LastSkipped.UTC().Format(time.RFC3339)))
	}
	if runs.Due.IsZero() {
		return runs.Next, nil
	}
	return runs.Next, r.start(ctx, w, obs, runs.Due)
}

// start creates the BackupJob for the run due at due, unless the
// concurrency policy forbids it or its name is taken by a stranger.
func (r *Reconciler) start(ctx context.Context, w *work, obs *observed, due time.Time) error {
	plan := w.plan
	job := newJob(plan, due)
	logger := log.FromContext(ctx).WithValues("backupJob", job.Name, "scheduledAt", due)

	// A job of ours with this name means the run already started (a
	// previous reconcile created it and crashed before writing status).
	var existing backupsv1alpha1.BackupJob
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), &existing)
	switch {
	case err == nil:
		return r.adopt(w, &existing, due)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read BackupJob %s/%s: %w", job.Namespace, job.Name, err)
	}

	if w.policy.Concurrency != planpolicy.Allow && obs.appJobsRunning {
		r.skip(w, backupsv1alpha1.PlanReasonConcurrencyForbidden, 1, due,
			fmt.Sprintf("skipped the run due at %s: a BackupJob for application %s has not finished and the concurrency policy is Forbid",
				due.UTC().Format(time.RFC3339), plan.Spec.ApplicationRef.Name))
		return nil
	}

	if err := controllerutil.SetControllerReference(plan, job, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own BackupJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	if err := r.Client.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), &existing); err != nil {
				return fmt.Errorf("read BackupJob %s/%s after AlreadyExists: %w", job.Namespace, job.Name, err)
			}
			return r.adopt(w, &existing, due)
		}
		return fmt.Errorf("create BackupJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	logger.Info("started scheduled backup")
	runsTotal.Inc()
	w.rec.LastScheduleTime = &metav1.Time{Time: due}
	msg := fmt.Sprintf("created BackupJob %s for the run due at %s", job.Name, due.UTC().Format(time.RFC3339))
	w.set(backupsv1alpha1.PlanConditionScheduled, metav1.ConditionTrue, backupsv1alpha1.PlanReasonJobCreated, msg)
	r.Recorder.Eventf(plan, job, corev1.EventTypeNormal, backupsv1alpha1.PlanReasonJobCreated, "Schedule", "%s", textlimit.Note(msg))
	return nil
}

// adopt handles a BackupJob that already has the run's name: ours means the
// run started; anyone else's means the run cannot start under that name.
func (r *Reconciler) adopt(w *work, existing *backupsv1alpha1.BackupJob, due time.Time) error {
	if ownedBy(existing, w.plan) {
		w.rec.LastScheduleTime = &metav1.Time{Time: due}
		return nil
	}
	r.skip(w, backupsv1alpha1.PlanReasonNameConflict, 1, due,
		fmt.Sprintf("skipped the run due at %s: BackupJob %s exists and does not belong to this Plan; rename or delete it",
			due.UTC().Format(time.RFC3339), existing.Name))
	return nil
}

// skip records that n runs, the newest due at last, did not start.
func (r *Reconciler) skip(w *work, reason string, n int, last time.Time, msg string) {
	skippedRunsTotal.WithLabelValues(reason).Add(float64(n))
	if cur := w.rec.LastSkippedTime; cur == nil || last.After(cur.Time) {
		w.rec.LastSkippedTime = &metav1.Time{Time: last}
	}
	w.set(backupsv1alpha1.PlanConditionScheduled, metav1.ConditionFalse, reason, msg)
	if reason == backupsv1alpha1.PlanReasonSuspended {
		// Asked for; a Warning at every tick would only be noise.
		return
	}
	r.Recorder.Eventf(w.plan, nil, corev1.EventTypeWarning, reason, "Schedule", "%s", textlimit.Note(msg))
}

// newJob is the BackupJob for the run of plan due at due.
func newJob(plan *backupsv1alpha1.Plan, due time.Time) *backupsv1alpha1.BackupJob {
	job := BackupJobFor(plan, cronschedule.RunName(plan.Name, due))
	job.Annotations = map[string]string{ScheduledAtAnnotation: due.UTC().Format(time.RFC3339)}
	return job
}

// BackupJobFor is a BackupJob of plan named name, as the scheduler makes
// them (labels, planRef, application, class), so Cozystack's and the
// driver's retention count it as the Plan's: the scheduler's runs, and
// the new base the point-in-time capture takes after a gap
// (internal/tenantjobs/capture/keeper), which carries no scheduled time.
func BackupJobFor(plan *backupsv1alpha1.Plan, name string) *backupsv1alpha1.BackupJob {
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	// Names that are not label values are hashed to fit; the spec still
	// names them exactly.
	labels := map[string]string{
		backupsv1alpha1.PlanNameLabel:        names.LabelValue(plan.Name),
		backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app.Name),
	}
	return &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: plan.Namespace, Name: name, Labels: labels},
		Spec: backupsv1alpha1.BackupJobSpec{
			PlanRef:         &backupsv1alpha1.LocalObjectReference{Name: plan.Name},
			ApplicationRef:  app,
			BackupClassName: plan.Spec.BackupClassName,
		},
	}
}

// recoverLastSchedule moves the record's last schedule time up to the
// newest run recorded on the Plan's own jobs, repairing a lost write.
func recoverLastSchedule(rec *planrecord.Record, obs *observed) {
	for i := range obs.ownJobs {
		j := &obs.ownJobs[i]
		if _, ok := j.Annotations[ScheduledAtAnnotation]; !ok {
			continue
		}
		at := JobScheduledAt(j)
		if cur := rec.LastScheduleTime; cur == nil || at.After(cur.Time) {
			rec.LastScheduleTime = &metav1.Time{Time: at}
		}
	}
}

func countRuns(n int, atLeast bool) string {
	s := fmt.Sprintf("%d run", n)
	if n != 1 {
		s += "s"
	}
	if atLeast {
		s = "at least " + s
	}
	return s
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}
