package v1alpha1

// PlanConditionScheduled is the condition type that reports the Plan's most
// recent scheduling decision: True when it started a BackupJob, False when it
// skipped a run (the reason says why).
const PlanConditionScheduled = "Scheduled"

// PlanConditionFieldsServed is False when the installed Plan CRD does not
// serve some of the driver's Plan fields (Cozystack's own CRD lacks the
// driver's extensions): those settings are pruned when written, so their
// defaults apply; the message lists them.
const PlanConditionFieldsServed = "FieldsServed"

// PlanReasonFieldsNotServed is the reason of a False FieldsServed.
const PlanReasonFieldsNotServed = "FieldsNotServed"

// Reasons of the Plan's Error condition.
const (
	// PlanReasonScheduleValid: the schedule parses; Error is False.
	PlanReasonScheduleValid = "ScheduleValid"
	// PlanReasonInvalidCron: spec.schedule.cron does not parse.
	PlanReasonInvalidCron = "InvalidCron"
	// PlanReasonInvalidTimeZone: spec.schedule.timeZone is not an IANA name.
	PlanReasonInvalidTimeZone = "InvalidTimeZone"
	// PlanReasonInvalidSpec: another field makes the Plan unusable, for
	// example an empty backupClassName.
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

// PlanConditionRehearsalOverdue is True when the plan's application has had
// no successful rehearsal within spec.drill.window (reason
// RehearsalOverdue), False when it has (RehearsalRecent).
const PlanConditionRehearsalOverdue = "RehearsalOverdue"

// Reasons of the RehearsalOverdue condition.
const (
	PlanReasonRehearsalOverdue = "RehearsalOverdue"
	PlanReasonRehearsalRecent  = "RehearsalRecent"
)

// Reasons of a Plan's drill Events (spec.drill).
const (
	// PlanReasonRehearsalStarted: the drill created its dry-run RestoreJob.
	PlanReasonRehearsalStarted = "RehearsalStarted"
	// PlanReasonNoBackupToRehearse: a drill was due and the plan has no
	// good Backup (Ready, Verified, not failed inspection, no content
	// drop); it was skipped.
	PlanReasonNoBackupToRehearse = "NoBackupToRehearse"
	// PlanReasonRehearsalSucceeded and PlanReasonRehearsalFailed: a drill's
	// RestoreJob ended.
	PlanReasonRehearsalSucceeded = "RehearsalSucceeded"
	PlanReasonRehearsalFailed    = "RehearsalFailed"
	// PlanReasonInvalidDrill: spec.drill.cron does not parse; backups go on,
	// drills do not.
	PlanReasonInvalidDrill = "InvalidDrill"
)
