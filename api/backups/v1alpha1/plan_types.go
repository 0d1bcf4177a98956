package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlanScheduleType says how a Plan's schedule is expressed.
type PlanScheduleType string

// Schedule types; an empty type means cron.
const (
	PlanScheduleTypeEmpty PlanScheduleType = ""
	PlanScheduleTypeCron  PlanScheduleType = "cron"
)

// PlanConditionError is the condition type that is True while a Plan cannot
// be scheduled (for example a bad cron expression or time zone).
const PlanConditionError = "Error"

// ConcurrencyPolicy says what a Plan does when its previous BackupJob for the
// application has not finished yet.
// +kubebuilder:validation:Enum=Forbid;Allow
type ConcurrencyPolicy string

// Concurrency policies.
const (
	// ConcurrencyForbid skips a run while another BackupJob of the plan runs.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyAllow starts runs regardless.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
)

// PlanSchedule says when a Plan runs.
type PlanSchedule struct {
	// Type of the schedule; only cron (or empty) is understood.
	// +optional
	Type PlanScheduleType `json:"type,omitempty"`
	// Cron is a standard five-field expression or a descriptor such as
	// @daily or @every 1h. Jenkins-style H terms (H, H(a-b), H/n,
	// H(a-b)/n) pick values from a hash of the Plan's namespace and name,
	// so that "H 3 * * *" runs at a minute of its own between 03:00 and
	// 03:59, the same one every day.
	// +optional
	Cron string `json:"cron,omitempty"`
	// TimeZone is an IANA name (for example Europe/Berlin) the cron
	// expression is read in; empty means UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// PlanRetention bounds how many of a plan's Backups are kept. The newest
// Ready Backup, and any Backup a RestoreJob is using, are always kept.
type PlanRetention struct {
	// KeepLast keeps at most this many Backups, newest first.
	// +optional
	// +kubebuilder:validation:Minimum=1
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge deletes Backups older than this duration (for example 720h).
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// PlanSpec schedules BackupJobs for one application.
type PlanSpec struct {
	// ApplicationRef is the application to back up.
	ApplicationRef TypedLocalObjectReference `json:"applicationRef"`
	// BackupClassName names the BackupClass each BackupJob uses.
	BackupClassName string `json:"backupClassName"`
	// Schedule says when to run.
	Schedule PlanSchedule `json:"schedule"`
	// StartingDeadlineSeconds: a run missed by more than this is skipped and
	// reported rather than started late. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// ConcurrencyPolicy is Forbid (default) or Allow.
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// SuccessfulJobsHistoryLimit keeps this many Succeeded BackupJobs (default 3).
	// +optional
	// +kubebuilder:validation:Minimum=0
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`
	// FailedJobsHistoryLimit keeps this many Failed BackupJobs (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
	// Suspend stops new runs; running jobs are not touched.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Retention prunes the plan's Backups.
	// +optional
	Retention *PlanRetention `json:"retention,omitempty"`
	// Drill rehearses the plan's newest Backup on a schedule of its own
	// (a dry-run RestoreJob: nothing live is touched).
	// +optional
	Drill *PlanDrill `json:"drill,omitempty"`
}

// PlanDrill schedules rehearsals of a Plan's newest good Backup.
type PlanDrill struct {
	// Cron is when to rehearse, as PlanSchedule.Cron reads it (H terms
	// allowed), in the schedule's time zone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron"`
	// Window: when the application has had no successful rehearsal for
	// this long, the plan's RehearsalOverdue condition turns True and the
	// metric behind the EtcdBackupRehearsalOverdue alert says so. Default
	// 192h (eight days: a weekly drill and a day of slack).
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
}

// PlanStatus is the observed state of a Plan.
type PlanStatus struct {
	// LastScheduleTime is the scheduled time of the newest run started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSkippedTime is the scheduled time of the newest run that was
	// skipped (missed deadline, concurrency, suspension); runs at or before
	// it are never reconsidered, so each skip is reported once.
	// +optional
	LastSkippedTime *metav1.Time `json:"lastSkippedTime,omitempty"`
	// NextScheduleTime is the next time a run is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastSuccessfulBackup names the newest Ready Backup of the plan.
	// +optional
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// LastDrillTime is the scheduled time of the newest drill started.
	// +optional
	LastDrillTime *metav1.Time `json:"lastDrillTime,omitempty"`
	// LastDrillSkippedTime is the scheduled time of the newest drill that
	// did not start (no good Backup, one still running, suspended, or past
	// the starting deadline): runs at or before it are not looked at again.
	// +optional
	LastDrillSkippedTime *metav1.Time `json:"lastDrillSkippedTime,omitempty"`
	// LastRehearsal is the outcome of the newest drill that ended.
	// +optional
	LastRehearsal *RehearsalRecord `json:"lastRehearsal,omitempty"`
	// LastSuccessfulRehearsalTime is when the newest successful rehearsal
	// of the plan's application ended.
	// +optional
	LastSuccessfulRehearsalTime *metav1.Time `json:"lastSuccessfulRehearsalTime,omitempty"`
	// Conditions; Error is True while the schedule cannot be used.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Plan creates BackupJobs for an application on a schedule.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="options.cozystack.io/source.applicationRef.kind=appkind"
// +kubebuilder:metadata:annotations="options.cozystack.io/source.backupClassName=backupclass"
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.apiGroup`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.kind`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.name`
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.applicationRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule.cron`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Plan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the schedule.
	Spec PlanSpec `json:"spec,omitempty"`
	// Status is the observed state.
	Status PlanStatus `json:"status,omitempty"`
}

// PlanList is a list of Plans.
//
// +kubebuilder:object:root=true
type PlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Plans.
	Items []Plan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Plan{}, &PlanList{})
}
