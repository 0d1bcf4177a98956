package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotPhase is the lifecycle of an EtcdSnapshot.
type SnapshotPhase string

// Snapshot phases. Complete and Failed are terminal.
const (
	SnapshotPhasePending  SnapshotPhase = "Pending"
	SnapshotPhaseStarted  SnapshotPhase = "Started"
	SnapshotPhaseComplete SnapshotPhase = "Complete"
	SnapshotPhaseFailed   SnapshotPhase = "Failed"
)

// SnapshotConditionReady is the single condition the operator writes on a
// snapshot: True only when Complete, otherwise False with the phase's reason.
const SnapshotConditionReady = "Ready"

// S3Destination is where a snapshot is streamed to.
type S3Destination struct {
	// Endpoint is the S3 URL including its scheme.
	Endpoint string `json:"endpoint"`
	// Bucket to write to.
	Bucket string `json:"bucket"`
	// Key is a prefix; the object is <key><name>.db when it ends with "/",
	// <key>/<name>.db otherwise, and <name>.db when empty.
	// +optional
	Key string `json:"key,omitempty"`
	// CredentialsSecretRef names a Secret with AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// Region of the bucket; empty means us-east-1.
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle selects path-style addressing.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// PVCDestination writes the snapshot onto a PersistentVolumeClaim.
type PVCDestination struct {
	// ClaimName of the PVC.
	ClaimName string `json:"claimName"`
	// SubPath inside the claim.
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// SnapshotLocation holds exactly one destination (the CRD rejects both
// and neither).
type SnapshotLocation struct {
	// S3 destination.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`
	// PVC destination.
	// +optional
	PVC *PVCDestination `json:"pvc,omitempty"`
}

// EtcdSnapshotSpec asks the operator for one snapshot of one cluster.
type EtcdSnapshotSpec struct {
	// ClusterRef names the EtcdCluster in the same namespace.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Destination of the snapshot.
	Destination SnapshotLocation `json:"destination"`
}

// SnapshotArtifact is where the operator stored the snapshot.
type SnapshotArtifact struct {
	// URI is s3://<bucket>/<object key>.
	URI string `json:"uri"`
	// SizeBytes of the stored object.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum is sha256:<hex> of the stored object.
	// +optional
	Checksum string `json:"checksum,omitempty"`
}

// EtcdSnapshotStatus is the operator's report.
type EtcdSnapshotStatus struct {
	// Phase is Pending, Started, Complete or Failed.
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`
	// Artifact is set when the phase is Complete.
	// +optional
	Artifact *SnapshotArtifact `json:"artifact,omitempty"`
	// Conditions; the operator writes a single Ready condition.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdSnapshot is a one-shot snapshot of an EtcdCluster, streamed by an
// operator-run Job named <snapshot>-snapshot.
//
// +kubebuilder:object:root=true
type EtcdSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	Spec EtcdSnapshotSpec `json:"spec,omitempty"`
	// Status is the operator's report.
	Status EtcdSnapshotStatus `json:"status,omitempty"`
}

// Ended reports whether the operator gave the snapshot its outcome
// (Complete or Failed).
func (s *EtcdSnapshot) Ended() bool {
	return s.Status.Phase == SnapshotPhaseComplete || s.Status.Phase == SnapshotPhaseFailed
}

// EtcdSnapshotList is a list of EtcdSnapshots.
//
// +kubebuilder:object:root=true
type EtcdSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the snapshots.
	Items []EtcdSnapshot `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdSnapshot{}, &EtcdSnapshotList{})
}
