package plan

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, reason, "Validate", "%s", err.Error())
		return nil, err
	}
	setCondition(plan, backupsv1alpha1.PlanConditionError, metav1.ConditionFalse,
		backupsv1alpha1.PlanReasonScheduleValid, "the schedule is valid")
	return sched, nil
}

func (r *Reconciler) checkSpec(plan *backupsv1alpha1.Plan) (Schedule, error) {
	if t := plan.Spec.Schedule.Type; t != backupsv1alpha1.PlanScheduleTypeEmpty && t != backupsv1alpha1.PlanScheduleTypeCron {
		return nil, fmt.Errorf("%w: spec.schedule.type %q is not supported; use \"cron\"", ErrInvalidCron, t)
	}
	sched, err := ParseSchedule(plan.Spec.Schedule.Cron, plan.Spec.Schedule.TimeZone)
	if err != nil {
		return nil, err
	}
	// Every BackupJob and Backup of the Plan carries its name as a label value.
	if errs := validation.IsValidLabelValue(plan.Name); len(errs) > 0 {
		return nil, fmt.Errorf("Plan name %q cannot be used as the %s label value (%s); use a name of at most 63 characters",
			plan.Name, backupsv1alpha1.PlanNameLabel, strings.Join(errs, "; "))
	}
	if plan.Spec.BackupClassName == "" {
		return nil, errors.New("spec.backupClassName is empty")
	}
	return sched, nil
}

// setCondition sets a condition on the Plan's status, keeping its
// transition time when the status does not change.
func setCondition(plan *backupsv1alpha1.Plan, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&plan.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: plan.Generation,
	})
}
