package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdCluster condition types and the reasons the driver cares about.
const (
	ClusterConditionAvailable   = "Available"
	ClusterConditionProgressing = "Progressing"
	ClusterConditionDegraded    = "Degraded"

	ReasonClusterDiscovered = "ClusterDiscovered"
	ReasonQuorumHealthy     = "QuorumHealthy"
	ReasonQuorumAvailable   = "QuorumAvailable"
	ReasonBootstrapFailed   = "BootstrapFailed"
)

// S3Source locates one snapshot object in S3.
type S3Source struct {
	// Endpoint is the S3 URL including its scheme.
	// +kubebuilder:validation:MinLength=1
	Endpoint string `json:"endpoint"`
	// Bucket holding the snapshot.
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`
	// Key is the exact object key of the snapshot (not a prefix).
	// +optional
	Key string `json:"key,omitempty"`
	// CredentialsSecretRef names a Secret with AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// Region of the bucket.
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle selects path-style addressing.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// PVCSource locates a snapshot on a PersistentVolumeClaim.
type PVCSource struct {
	// ClaimName of the PVC.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// SubPath of the snapshot file inside the claim.
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// RestoreSource is where a bootstrap restore reads the snapshot from.
type RestoreSource struct {
	// S3 source.
	// +optional
	S3 *S3Source `json:"s3,omitempty"`
	// PVC source.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
}

// RestoreSpec seeds a new cluster from a snapshot.
// +kubebuilder:validation:XValidation:rule="!has(self.source.s3) || (has(self.source.s3.key) && size(self.source.s3.key) > 0)",message="bootstrap.restore.source.s3.key must be the exact, non-empty object key"
// +kubebuilder:validation:XValidation:rule="!has(self.source.pvc) || (has(self.source.pvc.subPath) && size(self.source.pvc.subPath) > 0)",message="bootstrap.restore.source.pvc.subPath must be the exact, non-empty snapshot path"
type RestoreSpec struct {
	// Source of the snapshot.
	Source RestoreSource `json:"source"`
}

// BootstrapSpec says how a new cluster gets its first data.
type BootstrapSpec struct {
	// Restore seeds the cluster from a snapshot.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// StorageSpec is the members' storage.
type StorageSpec struct {
	// Size of each member's volume.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName of each member's volume.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Medium is empty (a PVC) or Memory.
	// +optional
	Medium string `json:"medium,omitempty"`
}

// EtcdClusterSpec mirrors the fields the driver reads; every other upstream
// field (tls, resources, affinity, options, ...) is preserved as written. The
// driver re-creates clusters from unstructured captures, never from this type,
// so nothing it does not mirror is lost.
//
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="spec.bootstrap cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(oldSelf.bootstrap) || self.bootstrap == oldSelf.bootstrap",message="spec.bootstrap is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(self.storage) || !has(self.storage.medium) || self.storage.medium != 'Memory'",message="bootstrap restore cannot be combined with storage.medium Memory"
type EtcdClusterSpec struct {
	// Version of etcd to run.
	// +optional
	Version string `json:"version,omitempty"`
	// Replicas is the number of members.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Storage of the members.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// Bootstrap is consulted only while the cluster has no ID yet.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// EtcdClusterStatus mirrors the status fields the driver reads.
// +kubebuilder:pruning:PreserveUnknownFields
type EtcdClusterStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ClusterID of the running cluster; set once bootstrap is done.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// ReadyMembers counts members that serve requests.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// Conditions: Available, Progressing, Degraded.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdCluster is an etcd cluster run by the etcd-operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired cluster.
	Spec EtcdClusterSpec `json:"spec,omitempty"`
	// Status is the operator's report.
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the clusters.
	Items []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
