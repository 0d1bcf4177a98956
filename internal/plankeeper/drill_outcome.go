package plankeeper

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

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

// recordEnded writes the newest finished drill into the record's last
// rehearsal and the newest successful one's scheduled time into its last
// successful rehearsal time. Drills are ordered by the time their keyed
// name binds, not by the end their status reports: a drill recorded and
// pruned long ago, re-created by a tenant with a fresh end, stays as old as
// it was.
func (r *Reconciler) recordEnded(w *work, drills []backupsv1alpha1.RestoreJob) {
	rec := &w.rec
	for i := range drills {
		rj := &drills[i]
		due, _ := drillScheduledAt(rj)
		if !rj.Status.Phase.IsTerminal() {
			continue
		}
		ok := rj.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded
		if ok && (rec.LastSuccessfulRehearsalTime == nil || due.After(rec.LastSuccessfulRehearsalTime.Time)) {
			rec.LastSuccessfulRehearsalTime = &metav1.Time{Time: due}
		}
		if last := rec.LastRehearsal; last != nil && !due.After(last.ScheduledAt.Time) {
			continue
		}
		rec.LastRehearsal = &planrecord.Rehearsal{
			RestoreJob:  rj.Name,
			Backup:      rj.Spec.BackupRef.Name,
			Succeeded:   ok,
			ScheduledAt: metav1.Time{Time: due},
			CompletedAt: metav1.Time{Time: drillEnded(rj)},
			Message:     textlimit.Cut(rj.Status.Message, planrecord.MaxMessage),
		}
		reason, kind := backupsv1alpha1.PlanReasonRehearsalSucceeded, corev1.EventTypeNormal
		if !ok {
			reason, kind = backupsv1alpha1.PlanReasonRehearsalFailed, corev1.EventTypeWarning
		}
		r.Recorder.Eventf(w.plan, rj, kind, reason, "Drill", "%s", textlimit.Note(fmt.Sprintf(
			"rehearsal %s of Backup %s %s: %s", rj.Name, rj.Spec.BackupRef.Name, map[bool]string{true: "succeeded", false: "failed"}[ok], rj.Status.Message)))
	}
}

// pruneDrills deletes the Plan's finished drills beyond the newest
// drillHistory, once the stored record holds what they said.
func (r *Reconciler) pruneDrills(ctx context.Context, stored *planrecord.Record, drills []backupsv1alpha1.RestoreJob) error {
	var done []*backupsv1alpha1.RestoreJob
	for i := range drills {
		if drills[i].Status.Phase.IsTerminal() && drills[i].DeletionTimestamp == nil {
			done = append(done, &drills[i])
		}
	}
	if len(done) <= drillHistory {
		return nil
	}
	sort.Slice(done, func(i, j int) bool {
		a, _ := drillScheduledAt(done[i])
		b, _ := drillScheduledAt(done[j])
		return a.After(b)
	})
	var errs []error
	for _, rj := range done[drillHistory:] {
		if !recorded(stored, rj) {
			continue // the next reconcile, after the record is written
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

// recorded reports whether the stored record already accounts for rj's
// outcome, so deleting rj loses nothing.
func recorded(st *planrecord.Record, rj *backupsv1alpha1.RestoreJob) bool {
	due, _ := drillScheduledAt(rj)
	if st.LastRehearsal == nil || st.LastRehearsal.ScheduledAt.Time.Before(due) {
		return false
	}
	if rj.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
		return st.LastSuccessfulRehearsalTime != nil && !st.LastSuccessfulRehearsalTime.Time.Before(due)
	}
	return true
}

// judgeOverdue sets the RehearsalOverdue condition and the drill metrics
// from the signed record (never from anything a tenant wrote unsigned), and
// returns when the condition would turn True (zero when it is).
func (r *Reconciler) judgeOverdue(w *work, window time.Duration, now time.Time, invalid string) time.Time {
	plan := w.plan
	since, what := plan.CreationTimestamp.Time, "the Plan was created"
	if t := w.rec.LastSuccessfulRehearsalTime; t != nil {
		since, what = t.Time, "the last successful rehearsal (scheduled)"
		lastSuccessfulRehearsal.WithLabelValues(plan.Namespace, plan.Name).Set(float64(t.Unix()))
	} else {
		lastSuccessfulRehearsal.DeleteLabelValues(plan.Namespace, plan.Name)
	}
	dueBy := since.Add(window)
	var flip time.Time
	if now.Sub(since) > window {
		msg := fmt.Sprintf("no successful rehearsal since %s at %s: more than the window of %s (overdue since %s)", what,
			since.UTC().Format(time.RFC3339), window, dueBy.UTC().Format(time.RFC3339))
		w.set(backupsv1alpha1.PlanConditionRehearsalOverdue, metav1.ConditionTrue, backupsv1alpha1.PlanReasonRehearsalOverdue, withInvalid(msg, invalid))
		rehearsalOverdue.WithLabelValues(plan.Namespace, plan.Name).Set(1)
	} else {
		msg := fmt.Sprintf("%s was at %s; overdue after %s (window %s)", what, since.UTC().Format(time.RFC3339), dueBy.UTC().Format(time.RFC3339), window)
		w.set(backupsv1alpha1.PlanConditionRehearsalOverdue, metav1.ConditionFalse, backupsv1alpha1.PlanReasonRehearsalRecent, withInvalid(msg, invalid))
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
