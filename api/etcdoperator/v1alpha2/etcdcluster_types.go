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
	// ReasonBootstrapFailed is final: the cluster never formed within its
	// progress deadline and must be deleted and re-created.
	ReasonBootstrapFailed = "BootstrapFailed"
	// ReasonDeadlineExceeded: a formed cluster did not reach its target
	// within the progress deadline; a spec change retries.
	ReasonDeadlineExceeded = "DeadlineExceeded"
)

// DefaultProgressDeadlineSeconds is the operator's (and its CRD's) default
// for spec.progressDeadlineSeconds.
const DefaultProgressDeadlineSeconds int32 = 600

// S3Source locates one snapshot object in S3.
type S3Source struct {
	// Endpoint is the S3 URL including its scheme.
	Endpoint string `json:"endpoint"`
	// Bucket holding the snapshot.
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

// RestoreSpec seeds a new cluster from a snapshot. The operator's CRD
// rejects an S3 source without a non-empty key.
type RestoreSpec struct {
	// Source of the snapshot.
	Source RestoreSource `json:"source"`
}

// BootstrapSpec says how a new cluster gets its first data. It can be
// neither added, removed nor changed after creation.
type BootstrapSpec struct {
	// Restore seeds the cluster from a snapshot.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// StorageSpec is the members' storage.
type StorageSpec struct {
	// Size of each member's volume; the CRD defaults it to 1Gi.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// StorageClassName of each member's volume.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Medium is empty (a PVC) or Memory.
	// +optional
	Medium string `json:"medium,omitempty"`
}

// EtcdOptions are the etcd server flags the operator passes to members.
type EtcdOptions struct {
	// QuotaBackendBytes is --quota-backend-bytes; 0 or unset is etcd's 2GiB.
	// +optional
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`
	// AutoCompactionMode is --auto-compaction-mode: periodic or revision.
	// +optional
	AutoCompactionMode string `json:"autoCompactionMode,omitempty"`
	// AutoCompactionRetention is --auto-compaction-retention ("5m", "1h", a
	// revision count); unset or "0" disables auto-compaction.
	// +optional
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`
	// SnapshotCount is --snapshot-count (raft entries between internal
	// raft snapshots, unrelated to EtcdSnapshot).
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
}

// AdditionalMetadata are labels and annotations the operator merges onto
// every object it creates for a cluster (members, their PVCs, Services);
// the operator's own keys win on collision.
type AdditionalMetadata struct {
	// Labels merged onto created objects.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations merged onto created objects.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// EtcdClusterSpec mirrors the spec fields the driver and the stand-in
// operator read or set. Every other upstream field (tls, resources,
// affinity, additionalMetadata, ...) is kept by the API server as written
// and travels through the driver's unstructured captures.
type EtcdClusterSpec struct {
	// Version of etcd to run (X.Y.Z); the CRD requires it.
	Version string `json:"version"`
	// Replicas is the number of members; the CRD defaults it to 3. Zero is
	// a paused cluster, which the operator never bootstraps.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Storage of the members.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// Options are etcd server flags.
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`
	// AdditionalMetadata is stamped on the objects the operator creates.
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`
	// Bootstrap is consulted only while the cluster has no ID yet.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
	// ProgressDeadlineSeconds bounds how long the operator works towards a
	// target (the first bootstrap, a scale) before giving up with
	// BootstrapFailed (never formed: final) or DeadlineExceeded. The CRD
	// defaults it to 600.
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// ObservedClusterSpec is the target the operator latched from the spec
// (status.observed); it works towards it until reached or the deadline
// passes, and only then adopts a newer spec.
type ObservedClusterSpec struct {
	// Replicas is the latched member count.
	Replicas int32 `json:"replicas"`
	// Version is the latched etcd version.
	Version string `json:"version"`
	// Storage is the latched member storage.
	Storage StorageSpec `json:"storage"`
}

// EtcdClusterStatus mirrors the status fields the driver reads and the
// stand-in operator writes.
type EtcdClusterStatus struct {
	// ClusterID of the running cluster; set once bootstrap is done.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// ClusterToken is the initial cluster token, latched on first sight.
	// +optional
	ClusterToken string `json:"clusterToken,omitempty"`
	// Observed is the target being worked towards.
	// +optional
	Observed *ObservedClusterSpec `json:"observed,omitempty"`
	// ProgressDeadline is when the work towards Observed is abandoned;
	// cleared once reached. Setting it in the past aborts at once.
	// +optional
	ProgressDeadline *metav1.Time `json:"progressDeadline,omitempty"`
	// ReadyMembers counts members that serve requests. The operator
	// recounts it only once every member of the target exists, so it is 0
	// when the cluster is first discovered (Available=True,
	// ClusterDiscovered) and rises as the last members become ready.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// Conditions: Available, Progressing, Degraded.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdCluster is an etcd cluster run by the etcd-operator.
//
// +kubebuilder:object:root=true
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
