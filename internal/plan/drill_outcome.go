package plan

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
