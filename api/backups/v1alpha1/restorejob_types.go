package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// RestoreJobPhase is the coarse lifecycle of a RestoreJob.
type RestoreJobPhase string

// RestoreJob phases. Succeeded and Failed are terminal.
const (
	RestoreJobPhasePending   RestoreJobPhase = "Pending"
	RestoreJobPhaseRunning   RestoreJobPhase = "Running"
	RestoreJobPhaseSucceeded RestoreJobPhase = "Succeeded"
	RestoreJobPhaseFailed    RestoreJobPhase = "Failed"
)

// IsTerminal reports whether the phase never changes again.
func (p RestoreJobPhase) IsTerminal() bool {
	return p == RestoreJobPhaseSucceeded || p == RestoreJobPhaseFailed
}

// PinsBackups reports whether rj still holds the Backups it reads and took
// (the one it restores, its safety Backup) against every retention: while
// it runs, and after it failed having deleted the cluster without putting
// it back (NeedsAHand), until a person ends it by deleting the RestoreJob.
func (rj *RestoreJob) PinsBackups() bool {
	return !rj.Status.Phase.IsTerminal() || rj.NeedsAHand()
}

// NeedsAHand reports whether rj failed after the old cluster was deleted
// (condition TargetPurged True) and did not put it back (no rollback, or a
// rollback that failed too): the cluster may be missing, broken or empty,
// and the data may live only in its safety Backup.
func (rj *RestoreJob) NeedsAHand() bool {
	if rj.Status.Phase != RestoreJobPhaseFailed {
		return false
	}
	var purged, rolledBack bool
	for _, c := range rj.Status.Conditions {
		switch {
		case c.Type == RestoreConditionPurged:
			purged = c.Status == metav1.ConditionTrue
		case c.Type == RestoreConditionRollback:
			rolledBack = c.Status == metav1.ConditionTrue
		case c.Type == ConditionReady && c.Reason == string(ReasonRollbackFailed):
			return true
		}
	}
	return purged && !rolledBack
}

// RestoreJobSpec asks for one restore of one Backup.
type RestoreJobSpec struct {
	// BackupRef names the Backup, in the RestoreJob's namespace.
	BackupRef LocalObjectReference `json:"backupRef"`
	// TargetApplicationRef is where to restore; empty means in place, onto
	// the Backup's own application.
	// +optional
	TargetApplicationRef *TypedLocalObjectReference `json:"targetApplicationRef,omitempty"`
	// Options are driver-specific. The Etcd driver reads
	// restoreTimeoutSeconds (int, at most 86400), safetySnapshot (bool),
	// dryRun (bool: rehearse instead of restoring; see status.rehearsal),
	// verify ("Full", the default: download and check the snapshot's
	// sha256 and etcd integrity trailer; "Size": only check that it exists
	// with the recorded size) and rollback (bool, default true: re-create
	// the cluster from the safety Backup when the restore fails after the
	// old cluster was deleted).
	// At most 16 entries.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=16
	Options *runtime.RawExtension `json:"options,omitempty"`
}

// RestoreJobStatus is what the driver observed and did.
type RestoreJobStatus struct {
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase RestoreJobPhase `json:"phase,omitempty"`
	// StartedAt is when the driver first took the job.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when the job reached a terminal phase.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Message explains the phase to a person, including how to recover
	// after a failure.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions; Ready carries a typed reason while waiting and at the end.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Rehearsal is a dry run's report (spec.options.dryRun): what a real
	// restore would change. A dry run changes nothing.
	// +optional
	Rehearsal *driverv1alpha1.RehearsalReport `json:"rehearsal,omitempty"`
}

// RestoreJob is a request to restore an application from a Backup.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="options.cozystack.io/source.backupRef.name=backup"
// +kubebuilder:metadata:annotations="options.cozystack.io/source.targetApplicationRef.kind=appkind"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backupRef.name`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RestoreJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request. It is immutable: a restore in flight acts on
	// what it was asked when it started.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable; delete the RestoreJob and create a new one"
	Spec RestoreJobSpec `json:"spec,omitempty"`
	// Status is the driver's report.
	Status RestoreJobStatus `json:"status,omitempty"`
}

// RestoreJobList is a list of RestoreJobs.
//
// +kubebuilder:object:root=true
type RestoreJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RestoreJobs.
	Items []RestoreJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RestoreJob{}, &RestoreJobList{})
}
