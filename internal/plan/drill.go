package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// DefaultDrillWindow is how long a Plan with a drill may go without a
// successful rehearsal before RehearsalOverdue turns True: a weekly drill
// and a day of slack.
const DefaultDrillWindow = 192 * time.Hour

// drillHistory is how many finished drill RestoreJobs a Plan keeps.
const drillHistory = 3

// invalidDrillMark starts what the RehearsalOverdue condition says when
// the drill schedule does not parse.
const invalidDrillMark = "spec.drill.cron cannot be used"

// maxRehearsalMessage bounds RehearsalRecord.message (its CRD limit).
const maxRehearsalMessage = 1024

// DrillHashKey is what the H terms of a Plan's drill schedule are hashed
// with: not the backup schedule's key, so an "H" drill does not land on
// the minute its own backups start.
func DrillHashKey(namespace, name string) string {
	return HashKey(namespace, name) + "/drill"
}

// DrillName is the deterministic name of the dry-run RestoreJob plan
// starts for the drill scheduled at scheduled: a crash or a second
// reconcile finds it instead of making another.
func DrillName(plan string, scheduled time.Time) string {
	return JobName(plan+"-drill", scheduled)
}

// drillWindow is the Plan's spec.drill.window, or the default.
func drillWindow(d *backupsv1alpha1.PlanDrill) time.Duration {
	if d.Window != nil && d.Window.Duration > 0 {
		return d.Window.Duration
	}
	return DefaultDrillWindow
}

// drill runs the Plan's rehearsal schedule: it records drills that ended,
// starts the one due at now, prunes old ones and judges whether a
// rehearsal is overdue. It returns when it must look again (zero: only
// when something changes). persisted is the status as stored, which says
// what is already recorded.
func (r *Reconciler) drill(ctx context.Context, plan *backupsv1alpha1.Plan, persisted *backupsv1alpha1.PlanStatus, obs *observed, now time.Time) (time.Time, error) {
	if plan.Spec.Drill == nil {
		forgetDrillMetrics(plan.Namespace, plan.Name)
		meta.RemoveStatusCondition(&plan.Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
		return time.Time{}, nil
	}
	drills, err := r.ownDrills(ctx, plan)
	if err != nil {
		return time.Time{}, err
	}
	recoverLastDrill(plan, drills)
	r.recordEnded(plan, drills)

	var next time.Time
	var startErr error
	invalid := ""
	sched, err := ParseSchedule(plan.Spec.Drill.Cron, plan.Spec.Schedule.TimeZone, DrillHashKey(plan.Namespace, plan.Name))
	if err != nil {
		invalid = invalidDrillMark + ": " + err.Error() + "; no drills run until it is fixed"
	} else {
		next, startErr = r.runDueDrill(ctx, plan, obs, drills, sched, now)
	}
	pruneErr := r.pruneDrills(ctx, plan, persisted, drills)
	if plan.Spec.Suspend {
		// Asked for, as the backup alerts leave suspended Plans alone;
		// on resume the window counts from the last success again.
		forgetDrillMetrics(plan.Namespace, plan.Name)
		meta.RemoveStatusCondition(&plan.Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
		return next, errors.Join(startErr, pruneErr)
	}
	flip := r.judgeOverdue(plan, now, invalid)
	if invalid != "" {
		// Once per change of the stored condition, not per reconcile.
		was := meta.FindStatusCondition(persisted.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
		if was == nil || !strings.Contains(was.Message, invalidDrillMark) {
			r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonInvalidDrill, "Validate", "%s", textlimit.Note(invalid))
		}
	}
	return earliest(next, flip), errors.Join(startErr, pruneErr)
}

// ownDrills lists the dry-run RestoreJobs the Plan started.
func (r *Reconciler) ownDrills(ctx context.Context, plan *backupsv1alpha1.Plan) ([]backupsv1alpha1.RestoreJob, error) {
	var list backupsv1alpha1.RestoreJobList
	if err := r.Client.List(ctx, &list, client.InNamespace(plan.Namespace),
		client.MatchingLabels{backupsv1alpha1.DrillLabel: "true"}); err != nil {
		return nil, fmt.Errorf("list drill RestoreJobs in %s: %w", plan.Namespace, err)
	}
	var out []backupsv1alpha1.RestoreJob
	for _, rj := range list.Items {
		// The label is a hint anyone can set; the controller reference
		// (to this Plan's UID) says the Plan made it.
		if ref := metav1.GetControllerOf(&rj); ref != nil && ref.UID == plan.UID {
			out = append(out, rj)
		}
	}
	return out, nil
}

// drillEnded is when a finished drill ended.
func drillEnded(rj *backupsv1alpha1.RestoreJob) time.Time {
	if rj.Status.CompletedAt != nil {
		return rj.Status.CompletedAt.Time
	}
	if c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady); c != nil {
		return c.LastTransitionTime.Time
	}
	return rj.CreationTimestamp.Time
}

// recordEnded writes the newest finished drill into status.lastRehearsal
// and the newest successful one's end into lastSuccessfulRehearsalTime.
func (r *Reconciler) recordEnded(plan *backupsv1alpha1.Plan, drills []backupsv1alpha1.RestoreJob) {
	st := &plan.Status
	for i := range drills {
		rj := &drills[i]
		if !rj.Status.Phase.IsTerminal() {
			continue
		}
		ended := drillEnded(rj)
		ok := rj.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded
		if ok && (st.LastSuccessfulRehearsalTime == nil || ended.After(st.LastSuccessfulRehearsalTime.Time)) {
			st.LastSuccessfulRehearsalTime = &metav1.Time{Time: ended}
		}
		last := st.LastRehearsal
		if last != nil && (last.CompletedAt.After(ended) || (last.RestoreJob == rj.Name && last.CompletedAt.Equal(&metav1.Time{Time: ended}))) {
			continue
		}
		st.LastRehearsal = &backupsv1alpha1.RehearsalRecord{
			RestoreJob:  rj.Name,
			Backup:      rj.Spec.BackupRef.Name,
			Succeeded:   ok,
			CompletedAt: metav1.Time{Time: ended},
			Message:     textlimit.Cut(rj.Status.Message, maxRehearsalMessage),
		}
		reason, kind := backupsv1alpha1.PlanReasonRehearsalSucceeded, corev1.EventTypeNormal
		if !ok {
			reason, kind = backupsv1alpha1.PlanReasonRehearsalFailed, corev1.EventTypeWarning
		}
		r.Recorder.Eventf(plan, rj, kind, reason, "Drill", "%s", textlimit.Note(fmt.Sprintf(
			"rehearsal %s of Backup %s %s: %s", rj.Name, rj.Spec.BackupRef.Name, map[bool]string{true: "succeeded", false: "failed"}[ok], rj.Status.Message)))
	}
}

// runDueDrill starts or skips the drill due at now and returns the next
// drill time.
func (r *Reconciler) runDueDrill(ctx context.Context, plan *backupsv1alpha1.Plan, obs *observed, drills []backupsv1alpha1.RestoreJob, sched Schedule, now time.Time) (time.Time, error) {
	deadline := DefaultStartingDeadline
	if s := plan.Spec.StartingDeadlineSeconds; s != nil {
		deadline = time.Duration(*s) * time.Second
	}
	runs := DueRuns(sched, lastDrillConsidered(plan, drills), now, deadline)
	if n := runs.Missed + runs.Superseded; n > 0 {
		// A missed drill is only a later one; the next due one starts.
		skipDrill(plan, runs.LastSkipped)
	}
	if runs.Due.IsZero() {
		return runs.Next, nil
	}
	if plan.Spec.Suspend {
		skipDrill(plan, runs.Due)
		return runs.Next, nil
	}
	for i := range drills {
		if !drills[i].Status.Phase.IsTerminal() && drills[i].Name != DrillName(plan.Name, runs.Due) {
			skipDrill(plan, runs.Due)
			r.Recorder.Eventf(plan, &drills[i], corev1.EventTypeWarning, backupsv1alpha1.PlanReasonConcurrencyForbidden, "Drill",
				"skipped the drill due at %s: drill %s has not finished", runs.Due.UTC().Format(time.RFC3339), drills[i].Name)
			return runs.Next, nil
		}
	}
	backup := newestGood(obs.backups)
	if backup == nil {
		skipDrill(plan, runs.Due)
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonNoBackupToRehearse, "Drill",
			"skipped the drill due at %s: the Plan has no good Backup to rehearse (Ready, Verified, not failed inspection, no content drop)",
			runs.Due.UTC().Format(time.RFC3339))
		return runs.Next, nil
	}
	return runs.Next, r.startDrill(ctx, plan, backup, runs.Due)
}

// startDrill creates the dry-run RestoreJob of backup for the drill due at
// due, or finds the one an earlier reconcile created.
func (r *Reconciler) startDrill(ctx context.Context, plan *backupsv1alpha1.Plan, backup *backupsv1alpha1.Backup, due time.Time) error {
	rj := newDrill(plan, backup, due)
	if err := controllerutil.SetControllerReference(plan, rj, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own drill RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	err := r.Client.Create(ctx, rj)
	if apierrors.IsAlreadyExists(err) {
		var existing backupsv1alpha1.RestoreJob
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rj), &existing); err != nil {
			return fmt.Errorf("read RestoreJob %s/%s after AlreadyExists: %w", rj.Namespace, rj.Name, err)
		}
		if ref := metav1.GetControllerOf(&existing); ref != nil && ref.UID == plan.UID {
			plan.Status.LastDrillTime = &metav1.Time{Time: due}
			return nil
		}
		skipDrill(plan, due)
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonNameConflict, "Drill",
			"skipped the drill due at %s: RestoreJob %s exists and does not belong to this Plan", due.UTC().Format(time.RFC3339), rj.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("create drill RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	log.FromContext(ctx).Info("started drill", "restoreJob", rj.Name, "backup", backup.Name, "scheduledAt", due)
	plan.Status.LastDrillTime = &metav1.Time{Time: due}
	r.Recorder.Eventf(plan, rj, corev1.EventTypeNormal, backupsv1alpha1.PlanReasonRehearsalStarted, "Drill",
		"created dry-run RestoreJob %s rehearsing Backup %s for the drill due at %s", rj.Name, backup.Name, due.UTC().Format(time.RFC3339))
	return nil
}

// newDrill is the dry-run RestoreJob of backup for plan's drill at due.
func newDrill(plan *backupsv1alpha1.Plan, backup *backupsv1alpha1.Backup, due time.Time) *backupsv1alpha1.RestoreJob {
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	raw, _ := json.Marshal(map[string]bool{"dryRun": true})
	return &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: plan.Namespace,
			Name:      DrillName(plan.Name, due),
			Labels: map[string]string{
				backupsv1alpha1.PlanNameLabel:        names.LabelValue(plan.Name),
				backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app.Name),
				backupsv1alpha1.DrillLabel:           "true",
			},
			Annotations: map[string]string{ScheduledAtAnnotation: due.UTC().Format(time.RFC3339)},
		},
		Spec: backupsv1alpha1.RestoreJobSpec{
			BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name},
			Options:   &runtime.RawExtension{Raw: raw},
		},
	}
}

// skipDrill remembers that the drill due at t did not start.
func skipDrill(plan *backupsv1alpha1.Plan, t time.Time) {
	if cur := plan.Status.LastDrillSkippedTime; cur == nil || t.After(cur.Time) {
		plan.Status.LastDrillSkippedTime = &metav1.Time{Time: t}
	}
}

// recoverLastDrill moves status.lastDrillTime up to the newest run
// recorded on the Plan's own drills, repairing a lost status write.
func recoverLastDrill(plan *backupsv1alpha1.Plan, drills []backupsv1alpha1.RestoreJob) {
	for i := range drills {
		at, ok := drillScheduledAt(&drills[i])
		if ok && (plan.Status.LastDrillTime == nil || at.After(plan.Status.LastDrillTime.Time)) {
			plan.Status.LastDrillTime = &metav1.Time{Time: at}
		}
	}
}

// drillScheduledAt is the run time a drill records.
func drillScheduledAt(rj *backupsv1alpha1.RestoreJob) (time.Time, bool) {
	v, ok := rj.Annotations[ScheduledAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	return at, err == nil
}

// lastDrillConsidered is the newest drill time already started or skipped:
// the Plan's creation, its status, and the run times on its own drills (a
// lost status write cannot make a drill happen twice).
func lastDrillConsidered(plan *backupsv1alpha1.Plan, drills []backupsv1alpha1.RestoreJob) time.Time {
	t := plan.CreationTimestamp.Time
	for _, mt := range []*metav1.Time{plan.Status.LastDrillTime, plan.Status.LastDrillSkippedTime} {
		if mt != nil && mt.After(t) {
			t = mt.Time
		}
	}
	for i := range drills {
		if at, ok := drillScheduledAt(&drills[i]); ok && at.After(t) {
			t = at
		}
	}
	return t
}

// newestGood is the newest Backup a drill should rehearse: Ready, not
// being deleted, Verified True, not failed inspection, no content drop.
// backups are the Plan's provenance-verified Backups.
func newestGood(backups []backupsv1alpha1.Backup) *backupsv1alpha1.Backup {
	var best *backupsv1alpha1.Backup
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase != backupsv1alpha1.BackupPhaseReady || b.DeletionTimestamp != nil ||
			!meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionVerified) ||
			meta.IsStatusConditionFalse(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected) ||
			meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionContentDrop) {
			continue
		}
		if best == nil || b.Spec.TakenAt.After(best.Spec.TakenAt.Time) {
			best = b
		}
	}
	return best
}

// pruneDrills deletes the Plan's finished drills beyond the newest
// drillHistory, once the stored status holds what they said.
func (r *Reconciler) pruneDrills(ctx context.Context, plan *backupsv1alpha1.Plan, persisted *backupsv1alpha1.PlanStatus, drills []backupsv1alpha1.RestoreJob) error {
	var done []*backupsv1alpha1.RestoreJob
	for i := range drills {
		if drills[i].Status.Phase.IsTerminal() && drills[i].DeletionTimestamp == nil {
			done = append(done, &drills[i])
		}
	}
	if len(done) <= drillHistory {
		return nil
	}
	sort.Slice(done, func(i, j int) bool { return drillEnded(done[i]).After(drillEnded(done[j])) })
	var errs []error
	for _, rj := range done[drillHistory:] {
		if !recorded(persisted, rj) {
			continue // the next reconcile, after the status write
		}
		err := r.Client.Delete(ctx, rj, client.Preconditions{UID: &rj.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete drill RestoreJob %s/%s beyond the history: %w", rj.Namespace, rj.Name, err))
			continue
		}
		log.FromContext(ctx).Info("pruned drill RestoreJob beyond the history", "restoreJob", rj.Name, "phase", rj.Status.Phase)
	}
	return errors.Join(errs...)
}

// recorded reports whether the stored status already accounts for rj's
// outcome, so deleting rj loses nothing.
func recorded(st *backupsv1alpha1.PlanStatus, rj *backupsv1alpha1.RestoreJob) bool {
	ended := drillEnded(rj)
	if st.LastRehearsal == nil || st.LastRehearsal.CompletedAt.Time.Before(ended) {
		return false
	}
	if rj.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
		return st.LastSuccessfulRehearsalTime != nil && !st.LastSuccessfulRehearsalTime.Time.Before(ended)
	}
	return true
}

// judgeOverdue sets the RehearsalOverdue condition and the drill metrics,
// and returns when the condition would turn True (zero when it is).
func (r *Reconciler) judgeOverdue(plan *backupsv1alpha1.Plan, now time.Time, invalid string) time.Time {
	window := drillWindow(plan.Spec.Drill)
	since, what := plan.CreationTimestamp.Time, "the Plan was created"
	if t := plan.Status.LastSuccessfulRehearsalTime; t != nil {
		since, what = t.Time, "the last successful rehearsal"
		lastSuccessfulRehearsal.WithLabelValues(plan.Namespace, plan.Name).Set(float64(t.Unix()))
	} else {
		lastSuccessfulRehearsal.DeleteLabelValues(plan.Namespace, plan.Name)
	}
	dueBy := since.Add(window)
	var flip time.Time
	if now.Sub(since) > window {
		msg := fmt.Sprintf("no successful rehearsal since %s at %s: more than the window of %s (overdue since %s)", what,
			since.UTC().Format(time.RFC3339), window, dueBy.UTC().Format(time.RFC3339))
		setCondition(plan, backupsv1alpha1.PlanConditionRehearsalOverdue, metav1.ConditionTrue, backupsv1alpha1.PlanReasonRehearsalOverdue, withInvalid(msg, invalid))
		rehearsalOverdue.WithLabelValues(plan.Namespace, plan.Name).Set(1)
	} else {
		msg := fmt.Sprintf("%s was at %s; overdue after %s (window %s)", what, since.UTC().Format(time.RFC3339), dueBy.UTC().Format(time.RFC3339), window)
		setCondition(plan, backupsv1alpha1.PlanConditionRehearsalOverdue, metav1.ConditionFalse, backupsv1alpha1.PlanReasonRehearsalRecent, withInvalid(msg, invalid))
		rehearsalOverdue.WithLabelValues(plan.Namespace, plan.Name).Set(0)
		// "More than the window": the first instant past it.
		flip = dueBy.Add(time.Second)
	}
	return flip
}

// withInvalid appends why drills do not run; the Warning is emitted when
// that first shows on the condition.
func withInvalid(msg, invalid string) string {
	if invalid == "" {
		return msg
	}
	return msg + "; " + invalid
}

// earliest is the earlier of two times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
