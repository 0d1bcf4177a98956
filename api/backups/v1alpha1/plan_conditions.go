package v1alpha1

// PlanConditionScheduled is the condition type that reports the driver's
// scheduler's most recent decision: True when it started a BackupJob,
// False when it skipped a run (the reason says why).
const PlanConditionScheduled = "Scheduled"

// Reasons of the Plan's Error condition.
const (
	// PlanReasonScheduleValid: the schedule parses; Error is False.
	PlanReasonScheduleValid = "ScheduleValid"
	// PlanReasonInvalidCron: spec.schedule.cron does not parse.
	PlanReasonInvalidCron = "InvalidCron"
	// PlanReasonInvalidTimeZone: the CRON_TZ= prefix of spec.schedule.cron
	// is not an IANA name.
	PlanReasonInvalidTimeZone = "InvalidTimeZone"
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

// PlanConditionPolicyValid is True when every etcd-backup-driver.cozystack.io/*
// annotation of the Plan (retention, drill, the scheduler's settings)
// parses; the message says where the platform's bounds or defaults apply.
// False names the annotation that does not parse (reason
// Invalid<Setting>, for example InvalidRetentionKeepLast): that setting
// is not applied.
const PlanConditionPolicyValid = "PolicyValid"

// Reasons of the PolicyValid condition besides Invalid<Setting>.
const (
	// PlanReasonPolicyValid: every setting parses and applies as written.
	PlanReasonPolicyValid = "PolicyValid"
	// PlanReasonPolicyBounded: every setting parses; a platform bound or
	// default replaced some (the message says which).
	PlanReasonPolicyBounded = "PolicyBounded"
	// PlanReasonMigrationConflict: a setting the Plan still holds in a
	// field of the driver's earlier Plan CRD differs from the annotation
	// that now holds it; the driver changed nothing, and that setting is
	// not applied until the two agree (or the old field is removed).
	PlanReasonMigrationConflict = "MigrationConflict"
	// PlanReasonSettingsMigrated (an Event): the driver moved settings from
	// fields of its earlier Plan CRD to the Plan's annotations.
	PlanReasonSettingsMigrated = "SettingsMigrated"
)

// PlanConditionRehearsalOverdue is True when the plan's application has had
// no successful rehearsal within its drill window (reason
// RehearsalOverdue), False when it has (RehearsalRecent).
const PlanConditionRehearsalOverdue = "RehearsalOverdue"

// Reasons of the RehearsalOverdue condition.
const (
	PlanReasonRehearsalOverdue = "RehearsalOverdue"
	PlanReasonRehearsalRecent  = "RehearsalRecent"
)

// Reasons of a Plan's drill Events.
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
)
