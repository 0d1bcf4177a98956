package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdStrategyKind is the kind name BackupClasses use to bind this strategy.
const EtcdStrategyKind = "Etcd"

// SecretReference names a Secret in the application's namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// EtcdS3Template describes an S3 destination. Every string is a Go template
// rendered with .Application (the application object) and .Parameters (the
// BackupClass parameters).
type EtcdS3Template struct {
	// Bucket name.
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`
	// Endpoint is the S3 URL including its scheme (http or https).
	// +kubebuilder:validation:MinLength=1
	Endpoint string `json:"endpoint"`
	// Key is an object key prefix; the operator appends <snapshot>.db.
	// +optional
	Key string `json:"key,omitempty"`
	// Region of the bucket; empty means us-east-1 to the operator.
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle selects path-style addressing; unset means false.
	// +optional
	ForcePathStyle *bool `json:"forcePathStyle,omitempty"`
	// CredentialsSecretRef names a Secret in the application namespace with
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`
}

// EtcdDestinationTemplate says where snapshots go. Only S3 is supported.
// +kubebuilder:validation:XValidation:rule="has(self.s3)",message="s3 destination is required (PVC is intentionally not supported by this strategy until upstream restore-agent reads the same path the backup-agent writes; see the strategy comments)"
type EtcdDestinationTemplate struct {
	// S3 destination.
	S3 *EtcdS3Template `json:"s3"`
}

// EtcdTemplate is the templated part of the strategy.
type EtcdTemplate struct {
	// Destination of the snapshots.
	Destination EtcdDestinationTemplate `json:"destination"`
}

// EtcdSpec is the strategy: where snapshots go, and nothing more. The
// platform admin's settings for the strategy (deletion policy, plain http,
// the credential broker, inspection, retention bounds) live in the
// StrategyPolicy of the same name (api/driver/v1alpha1): Cozystack's CRD
// serves no more than this, and prunes what it does not serve.
type EtcdSpec struct {
	// Template is rendered for each BackupJob.
	Template EtcdTemplate `json:"template"`
}

// EtcdStatus is the observed state of the strategy.
type EtcdStatus struct {
	// Conditions of the strategy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Etcd is a cluster-scoped strategy that backs up an etcd application by
// asking the etcd-operator for an EtcdSnapshot streamed to S3.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.template.destination.s3.bucket`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Etcd struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the strategy.
	Spec EtcdSpec `json:"spec"`
	// Status is the observed state.
	// +optional
	Status EtcdStatus `json:"status"`
}

// EtcdList is a list of Etcd strategies.
//
// +kubebuilder:object:root=true
type EtcdList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the strategies.
	Items []Etcd `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Etcd{}, &EtcdList{})
}
