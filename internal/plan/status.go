package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// validate parses the Plan's schedule and checks what else would make every
// run fail. On failure it sets the Error condition, clears the next run time
// and emits a Warning; the caller reports a terminal error, since only an
// edit of the Plan (which triggers a reconcile) can fix it.
func (r *Reconciler) validate(plan *backupsv1alpha1.Plan) (Schedule, error) {
	sched, err := r.checkSpec(plan)
	if err != nil {
		reason := backupsv1alpha1.PlanReasonInvalidSpec
		switch {
		case errors.Is(err, ErrInvalidCron):
			reason = backupsv1alpha1.PlanReasonInvalidCron
		case errors.Is(err, ErrInvalidTimeZone):
			reason = backupsv1alpha1.PlanReasonInvalidTimeZone
		}
		setCondition(plan, backupsv1alpha1.PlanConditionError, metav1.ConditionTrue, reason,
			err.Error()+"; no BackupJobs are created until the Plan is fixed")
		plan.Status.NextScheduleTime = nil
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, reason, "Validate", "%s", textlimit.Note(err.Error()))
		return nil, err
	}
	setCondition(plan, backupsv1alpha1.PlanConditionError, metav1.ConditionFalse,
		backupsv1alpha1.PlanReasonScheduleValid, scheduleValidMessage(plan))
	return sched, nil
}

// scheduleValidMessage says the schedule is valid and, when it has H terms,
// what they resolve to for this Plan: the user sees the minute chosen.
func scheduleValidMessage(plan *backupsv1alpha1.Plan) string {
	expr := strings.TrimSpace(plan.Spec.Schedule.Cron)
	if !hashcron.Has(expr) {
		return "the schedule is valid"
	}
	resolved, err := hashcron.Resolve(expr, HashKey(plan.Namespace, plan.Name))
	if err != nil {
		// Not reached: validation resolved it already.
		return "the schedule is valid"
	}
	return fmt.Sprintf("the schedule is valid; %q runs as %q for this Plan (H terms are hashed from its namespace and name)", expr, resolved)
}

// noteNextRun repeats the next run time in the Error condition's message
// when the installed Plan CRD (Cozystack's own) prunes
// status.nextScheduleTime: the condition is the only status such a CRD
// keeps, and a user of H terms would otherwise not see when the Plan runs.
func (r *Reconciler) noteNextRun(ctx context.Context, plan *backupsv1alpha1.Plan, next time.Time) {
	if r.Schema == nil || next.IsZero() || plan.Status.NextScheduleTime == nil ||
		r.Schema.Serves(ctx, servedschema.PlanCRD, "status.nextScheduleTime") {
		return
	}
	c := meta.FindStatusCondition(plan.Status.Conditions, backupsv1alpha1.PlanConditionError)
	if c == nil || c.Status != metav1.ConditionFalse {
		return
	}
	setCondition(plan, backupsv1alpha1.PlanConditionError, metav1.ConditionFalse, c.Reason,
		scheduleValidMessage(plan)+"; next run at "+next.UTC().Format(time.RFC3339)+
			" (the installed Plan CRD does not serve status.nextScheduleTime)")
}

func (r *Reconciler) checkSpec(plan *backupsv1alpha1.Plan) (Schedule, error) {
	if t := plan.Spec.Schedule.Type; t != backupsv1alpha1.PlanScheduleTypeEmpty && t != backupsv1alpha1.PlanScheduleTypeCron {
		return nil, fmt.Errorf("%w: spec.schedule.type %q is not supported; use \"cron\"", ErrInvalidCron, t)
	}
	sched, err := ParseSchedule(plan.Spec.Schedule.Cron, plan.Spec.Schedule.TimeZone, HashKey(plan.Namespace, plan.Name))
	if err != nil {
		return nil, err
	}
	if plan.Spec.BackupClassName == "" {
		return nil, errors.New("spec.backupClassName is empty")
	}
	return sched, nil
}

// setCondition sets a condition on the Plan's status, keeping its
// transition time when the status does not change. The message is cut
// (textlimit): it quotes tenant input (a cron expression, names), and one
// over the CRD's limit would make every status write fail.
func setCondition(plan *backupsv1alpha1.Plan, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&plan.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            textlimit.Message(message),
		ObservedGeneration: plan.Generation,
	})
}

// defaultsWhenNotServed say what applies in place of each Plan field the
// installed CRD prunes.
var defaultsWhenNotServed = map[string]string{
	"spec.schedule.timeZone":          "UTC",
	"spec.concurrencyPolicy":          "Forbid",
	"spec.suspend":                    "never suspended",
	"spec.startingDeadlineSeconds":    "300",
	"spec.successfulJobsHistoryLimit": "3",
	"spec.failedJobsHistoryLimit":     "1",
	"spec.retention":                  "no retention: Backups are kept",
	"spec.drill":                      "no drills: nothing rehearses the Backups on a schedule",
}

// noteServedFields says, on the Plan, which of its fields the installed CRD
// does not serve (and what applies instead); the condition goes away when
// they are all served.
func (r *Reconciler) noteServedFields(ctx context.Context, plan *backupsv1alpha1.Plan) {
	if r.Schema == nil {
		return
	}
	missing := r.Schema.Missing(ctx, servedschema.PlanCRD)
	if len(missing) == 0 {
		meta.RemoveStatusCondition(&plan.Status.Conditions, backupsv1alpha1.PlanConditionFieldsServed)
		return
	}
	var parts []string
	for _, f := range missing {
		if d, ok := defaultsWhenNotServed[f]; ok {
			parts = append(parts, f+" ("+d+")")
		} else {
			parts = append(parts, f)
		}
	}
	msg := "the installed Plan CRD (Cozystack's own?) does not serve " + strings.Join(parts, ", ") +
		"; these settings are pruned when written and the defaults in brackets apply. Install the etcd-backup-driver's CRDs to use them"
	if c := meta.FindStatusCondition(plan.Status.Conditions, backupsv1alpha1.PlanConditionFieldsServed); c == nil || c.Message != msg {
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonFieldsNotServed, "Validate", "%s", textlimit.Note(msg))
	}
	setCondition(plan, backupsv1alpha1.PlanConditionFieldsServed, metav1.ConditionFalse, backupsv1alpha1.PlanReasonFieldsNotServed, msg)
}
