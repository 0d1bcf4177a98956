package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BackupPhase is the lifecycle of a Backup artefact.
type BackupPhase string

// Backup phases.
const (
	BackupPhasePending BackupPhase = "Pending"
	BackupPhaseReady   BackupPhase = "Ready"
	BackupPhaseFailed  BackupPhase = "Failed"
)

// BackupSpec records what was backed up, how and when.
type BackupSpec struct {
	// ApplicationRef is the application the backup holds.
	ApplicationRef TypedLocalObjectReference `json:"applicationRef"`
	// PlanRef names the Plan whose job took the backup, if any.
	// +optional
	PlanRef *LocalObjectReference `json:"planRef,omitempty"`
	// StrategyRef is the strategy object that took it; drivers restore only
	// the strategy kinds they own.
	StrategyRef TypedLocalObjectReference `json:"strategyRef"`
	// TakenAt is when the data was captured.
	TakenAt metav1.Time `json:"takenAt"`
	// DriverMetadata is opaque, driver-owned data needed to restore.
	// +optional
	DriverMetadata map[string]string `json:"driverMetadata,omitempty"`
}

// BackupArtifact locates the stored data.
type BackupArtifact struct {
	// URI of the stored object, for example s3://bucket/key.
	URI string `json:"uri"`
	// SizeBytes is the stored size.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum of the stored object, for example sha256:<hex>.
	// +optional
	Checksum string `json:"checksum,omitempty"`
}

// BackupStatus is written together with the Backup: the kind has no status
// subresource, so a create or update carries status as well.
type BackupStatus struct {
	// Phase is Pending, Ready or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Artifact locates the stored data.
	// +optional
	Artifact *BackupArtifact `json:"artifact,omitempty"`
	// UnderlyingResources is a self-typed object (it carries kind and
	// apiVersion) that the driver needs to restore. The Etcd drivers
	// write an EtcdBackupSnapshot; this driver keeps its own records
	// beside the peer's fields (internal/artifact reads and writes them).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	UnderlyingResources *runtime.RawExtension `json:"underlyingResources,omitempty"`
	// Conditions of the Backup.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Backup is a restorable artefact of one application. It deliberately has no
// status subresource: drivers write status in the same request as the spec.
// This is a mirror of Cozystack's kind, installed with Cozystack's own CRD
// (config/crd/upstream/cozystack): it has exactly the fields that CRD
// serves (test/crdmirror).
//
// +kubebuilder:object:root=true
// +kubebuilder:metadata:annotations="options.cozystack.io/source.applicationRef.kind=appkind"
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.apiGroup`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.kind`
// +kubebuilder:selectablefield:JSONPath=`.spec.applicationRef.name`
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec records the backup.
	Spec BackupSpec `json:"spec,omitempty"`
	// Status locates its data.
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Backups.
	Items []Backup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Backup{}, &BackupList{})
}
