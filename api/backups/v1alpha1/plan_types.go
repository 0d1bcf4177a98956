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
// be scheduled (for example a bad cron expression or time zone). It is
// Cozystack's own condition type: its Plan controller writes it with the
// same meaning.
const PlanConditionError = "Error"

// PlanSchedule says when a Plan runs.
type PlanSchedule struct {
	// Type of the schedule; only cron (or empty) is understood.
	// +optional
	Type PlanScheduleType `json:"type,omitempty"`
	// Cron is a standard five-field expression or a descriptor such as
	// @daily or @every 1h, optionally after a time zone prefix
	// (CRON_TZ=Europe/Berlin 0 3 * * *; UTC without one). The driver's
	// scheduler also reads Jenkins-style H terms (H, H(a-b), H/n,
	// H(a-b)/n), which pick values from a hash of the Plan's namespace and
	// name, so that "H 3 * * *" runs at a minute of its own between 03:00
	// and 03:59, the same one every day.
	// +optional
	Cron string `json:"cron,omitempty"`
}

// PlanSpec schedules BackupJobs for one application. It has exactly the
// fields of Cozystack's Plan CRD: what the driver adds (retention, drills,
// its scheduler's settings) is read from the Plan's annotations
// (internal/planpolicy).
type PlanSpec struct {
	// ApplicationRef is the application to back up.
	ApplicationRef TypedLocalObjectReference `json:"applicationRef"`
	// BackupClassName names the BackupClass each BackupJob uses.
	BackupClassName string `json:"backupClassName"`
	// Schedule says when to run.
	Schedule PlanSchedule `json:"schedule"`
}

// PlanStatus is the observed state of a Plan: conditions only, as
// Cozystack's Plan CRD serves; the driver's records about a Plan are in
// its etcd-backup-driver.cozystack.io/plan-status annotation
// (internal/planrecord).
type PlanStatus struct {
	// Conditions: Error (the schedule cannot be used), Scheduled,
	// PolicyValid and RehearsalOverdue.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Plan creates BackupJobs for an application on a schedule. Its CRD is
// Cozystack's own (config/crd/upstream/cozystack), not generated from this
// type.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="options.cozystack.io/source.applicationRef.kind=appkind"
// +kubebuilder:metadata:annotations="options.cozystack.io/source.backupClassName=backupclass"
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.apiGroup`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.kind`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.name`
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
