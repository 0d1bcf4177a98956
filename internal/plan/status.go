package plan

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// validate parses the Plan's schedule. On failure it sets the Error
// condition (Cozystack's own type, in the same meaning its Plan controller
// gives it), clears the next run time and emits a Warning; the caller
// reports a terminal error, since only an edit of the Plan (which triggers
// a reconcile) can fix it.
func (r *Reconciler) validate(w *work) (cronschedule.Schedule, error) {
	plan := w.plan
	sched, err := parseSchedule(plan)
	if err != nil {
		reason := backupsv1alpha1.PlanReasonInvalidCron
		if errors.Is(err, cronschedule.ErrInvalidTimeZone) {
			reason = backupsv1alpha1.PlanReasonInvalidTimeZone
		}
		w.set(backupsv1alpha1.PlanConditionError, metav1.ConditionTrue, reason,
			err.Error()+"; no BackupJobs are created until the Plan is fixed")
		w.rec.NextScheduleTime = nil
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, reason, "Validate", "%s", textlimit.Note(err.Error()))
		return nil, err
	}
	w.set(backupsv1alpha1.PlanConditionError, metav1.ConditionFalse, backupsv1alpha1.PlanReasonScheduleValid, scheduleValidMessage(plan))
	return sched, nil
}

func parseSchedule(plan *backupsv1alpha1.Plan) (cronschedule.Schedule, error) {
	if t := plan.Spec.Schedule.Type; t != backupsv1alpha1.PlanScheduleTypeEmpty && t != backupsv1alpha1.PlanScheduleTypeCron {
		return nil, fmt.Errorf("%w: spec.schedule.type %q is not supported; use \"cron\"", cronschedule.ErrInvalidCron, t)
	}
	return cronschedule.Parse(plan.Spec.Schedule.Cron, cronschedule.HashKey(plan.Namespace, plan.Name))
}

// scheduleValidMessage says the schedule is valid and, when it has H terms,
// what they resolve to for this Plan: the user sees the minute chosen.
func scheduleValidMessage(plan *backupsv1alpha1.Plan) string {
	expr := strings.TrimSpace(plan.Spec.Schedule.Cron)
	if !hashcron.Has(expr) {
		return "the schedule is valid"
	}
	resolved, err := hashcron.Resolve(expr, cronschedule.HashKey(plan.Namespace, plan.Name))
	if err != nil {
		// Not reached: validation resolved it already.
		return "the schedule is valid"
	}
	return fmt.Sprintf("the schedule is valid; %q runs as %q for this Plan (H terms are hashed from its namespace and name)", expr, resolved)
}

// set records a condition of the scheduler's for the write at the end of
// the reconcile.
func (w *work) set(condType string, status metav1.ConditionStatus, reason, message string) {
	c := planrecord.Condition(w.plan, condType, status, reason, message)
	for i := range w.update.Set {
		if w.update.Set[i].Type == condType {
			w.update.Set[i] = c
			return
		}
	}
	w.update.Set = append(w.update.Set, c)
}
