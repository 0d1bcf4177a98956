package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdStrategyKind is the kind name BackupClasses use to bind this strategy.
const EtcdStrategyKind = "Etcd"

// DeletionPolicy says what deleting a Backup does to the stored snapshot.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

// Deletion policies.
const (
	// DeletionPolicyRetain keeps the S3 object when its Backup is deleted.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete removes the S3 object with its Backup.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// SecretReference names a Secret in the application's namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CredentialBrokerProvider names the identity API of the S3 service.
// +kubebuilder:validation:Enum=MinIO
type CredentialBrokerProvider string

// Credential broker providers.
const (
	// CredentialBrokerMinIO issues MinIO service accounts with an inline
	// policy through MinIO's admin API.
	CredentialBrokerMinIO CredentialBrokerProvider = "MinIO"
)

// EtcdCredentialBroker makes the driver issue each tenant namespace its own
// S3 key, limited to the tenant's prefix, with a platform admin credential
// that stays in the driver's namespace. See docs/security.md.
// +kubebuilder:validation:XValidation:rule="self.provider == oldSelf.provider",message="provider is immutable: tenant keys of one provider cannot be found through another"
type EtcdCredentialBroker struct {
	// Provider is the S3 service's identity API.
	Provider CredentialBrokerProvider `json:"provider"`
	// AdminSecretRef names a Secret in the driver's namespace (never a
	// tenant's) with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY of the
	// platform credential that issues tenant keys and deletes snapshots.
	AdminSecretRef SecretReference `json:"adminSecretRef"`
	// AdminEndpoint is the URL of the provider's admin API when it differs
	// from the destination's endpoint.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/]+/?$`
	AdminEndpoint string `json:"adminEndpoint,omitempty"`
	// PrefixRoot is what every tenant prefix starts with: a tenant key may
	// list, read and write only under <prefixRoot><namespace>/, and the
	// rendered key must lie there. Empty (the default) or ending with "/".
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self == '' || (self.endsWith('/') && !self.startsWith('/'))",message="prefixRoot is empty or ends with / (and does not start with /)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[*?$]')",message="prefixRoot must not contain *, ? or $ (policy wildcards and variables)"
	PrefixRoot string `json:"prefixRoot,omitempty"`
	// RotationInterval is how often each tenant key is replaced; the
	// previous key keeps working for a grace period longer than any backup
	// or restore, then is deleted. Default 720h (30 days), at least 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="rotationInterval is at least 1h"
	RotationInterval *metav1.Duration `json:"rotationInterval,omitempty"`
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

// EtcdSpec is the strategy.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.credentialBroker) || has(self.credentialBroker)",message="credentialBroker cannot be removed: delete the strategy to remove its tenant keys"
// +kubebuilder:validation:XValidation:rule="!has(self.credentialBroker) || !has(self.template.destination.s3) || (!self.template.destination.s3.bucket.contains('{{') && !self.template.destination.s3.endpoint.contains('{{'))",message="with credentialBroker, bucket and endpoint are literal: one tenant key covers one bucket"
type EtcdSpec struct {
	// Template is rendered for each BackupJob.
	Template EtcdTemplate `json:"template"`
	// DeletionPolicy is recorded on each Backup when it is taken: Retain
	// (default) keeps the S3 object when the Backup is deleted; Delete
	// removes it.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// AllowHTTPEndpoint lets the rendered endpoint use plain http://. The
	// default is https only: over http the snapshot and the requests signed
	// with the tenant's S3 keys cross the network unencrypted.
	// +optional
	AllowHTTPEndpoint bool `json:"allowHTTPEndpoint,omitempty"`
	// CredentialBroker, when set, gives each tenant namespace its own S3
	// key issued by the driver; credentialsSecretRef is then ignored and
	// the EtcdSnapshot names the driver-owned Secret instead.
	// +optional
	CredentialBroker *EtcdCredentialBroker `json:"credentialBroker,omitempty"`
	// Inspection configures the manifest the driver records for each
	// Backup and the guard on content drops.
	// +optional
	Inspection *EtcdInspection `json:"inspection,omitempty"`
}

// EtcdInspection configures what the driver does after a snapshot lands.
type EtcdInspection struct {
	// Disabled skips inspection: Backups get no manifest and no
	// ContentDrop guard.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// MaxResourceDropPercent: a resource that loses more than this share
	// of its objects (and at least MinDroppedObjects of them) since the
	// previous good Backup marks the new one ContentDrop. Default 50.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxResourceDropPercent *int32 `json:"maxResourceDropPercent,omitempty"`
	// MinDroppedObjects keeps small resources from raising drops: a drop
	// of fewer objects is never one. Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinDroppedObjects *int32 `json:"minDroppedObjects,omitempty"`
	// MaxNamespacesGone: more namespaces than this disappearing since the
	// previous good Backup marks the new one ContentDrop. Default 0 (any
	// namespace disappearing).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxNamespacesGone *int32 `json:"maxNamespacesGone,omitempty"`
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
// +kubebuilder:printcolumn:name="Deletion",type=string,JSONPath=`.spec.deletionPolicy`
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
