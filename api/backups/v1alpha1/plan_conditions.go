package v1alpha1

// PlanConditionScheduled is the condition type that reports the Plan's most
// recent scheduling decision: True when it started a BackupJob, False when it
// skipped a run (the reason says why).
const PlanConditionScheduled = "Scheduled"

// Reasons of the Plan's Error condition.
const (
	// PlanReasonScheduleValid: the schedule parses; Error is False.
	PlanReasonScheduleValid = "ScheduleValid"
	// PlanReasonInvalidCron: spec.schedule.cron does not parse.
	PlanReasonInvalidCron = "InvalidCron"
	// PlanReasonInvalidTimeZone: spec.schedule.timeZone is not an IANA name.
	PlanReasonInvalidTimeZone = "InvalidTimeZone"
	// PlanReasonInvalidSpec: another field makes the Plan unusable, for
	// example a name too long to be a label value.
	PlanReasonInvalidSpec = "InvalidSpec"
)

// Reasons of the Plan's Scheduled condition (and of its Events).
const (
	// PlanReasonJobCreated: the BackupJob for the due run was created.
	PlanReasonJobCreated = "JobCreated"
	// PlanReasonMissedStartingDeadline: runs older than the starting
	// deadline were skipped instead of started late.
	PlanReasonMissedStartingDeadline = "MissedStartingDeadline"
	// PlanReasonConcurrencyForbidden: a run was skipped because another
	// BackupJob for the application had not finished (Forbid).
	PlanReasonConcurrencyForbidden = "ConcurrencyForbidden"
	// PlanReasonSuspended: a run was skipped because the Plan is suspended.
	PlanReasonSuspended = "Suspended"
	// PlanReasonNameConflict: a BackupJob with the run's name exists and
	// does not belong to this Plan.
	PlanReasonNameConflict = "NameConflict"
)
