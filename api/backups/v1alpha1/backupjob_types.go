package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupJobPhase is the coarse lifecycle of a BackupJob.
type BackupJobPhase string

// BackupJob phases. Succeeded and Failed are terminal.
const (
	BackupJobPhasePending   BackupJobPhase = "Pending"
	BackupJobPhaseRunning   BackupJobPhase = "Running"
	BackupJobPhaseSucceeded BackupJobPhase = "Succeeded"
	BackupJobPhaseFailed    BackupJobPhase = "Failed"
)

// IsTerminal reports whether the phase never changes again.
func (p BackupJobPhase) IsTerminal() bool {
	return p == BackupJobPhaseSucceeded || p == BackupJobPhaseFailed
}

// BackupJobSpec asks for one backup of one application.
type BackupJobSpec struct {
	// PlanRef names the Plan that scheduled this job, if any.
	// +optional
	PlanRef *LocalObjectReference `json:"planRef,omitempty"`
	// ApplicationRef is the application to back up; apiGroup defaults to
	// apps.cozystack.io.
	ApplicationRef TypedLocalObjectReference `json:"applicationRef"`
	// BackupClassName names the BackupClass that says how to back it up.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backupClassName is immutable"
	BackupClassName string `json:"backupClassName"`
}

// BackupJobStatus is what the driver observed and did.
type BackupJobStatus struct {
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupJobPhase `json:"phase,omitempty"`
	// BackupRef names the Backup this job produced.
	// +optional
	BackupRef *LocalObjectReference `json:"backupRef,omitempty"`
	// StartedAt is when the driver first took the job.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when the job reached a terminal phase.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Message explains the phase to a person.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions; Ready carries a typed reason while waiting and at the end.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupJob is a request, from a tenant or a Plan, to take one backup of an
// application through the strategy its BackupClass names.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="options.cozystack.io/source.applicationRef.kind=appkind"
// +kubebuilder:metadata:annotations="options.cozystack.io/source.backupClassName=backupclass"
// +kubebuilder:metadata:annotations="options.cozystack.io/source.planRef.name=plan"
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.apiGroup`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.kind`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.applicationRef.name`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backupRef.name`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackupJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	Spec BackupJobSpec `json:"spec,omitempty"`
	// Status is the driver's report.
	Status BackupJobStatus `json:"status,omitempty"`
}

// BackupJobList is a list of BackupJobs.
//
// +kubebuilder:object:root=true
type BackupJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the BackupJobs.
	Items []BackupJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupJob{}, &BackupJobList{})
}
