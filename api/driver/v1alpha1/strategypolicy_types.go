package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StrategyPolicyKind is the kind name of StrategyPolicy objects.
const StrategyPolicyKind = "StrategyPolicy"

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

// SecretReference names a Secret in the driver's own namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
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

// CredentialBroker makes the driver issue each tenant namespace its own S3
// key, limited to the tenant's prefix, with a platform admin credential that
// stays in the driver's namespace. See docs/security.md.
//
// The strategy's bucket and endpoint must then be literal (no "{{"): one
// tenant key covers one bucket at one endpoint. That rule spans two objects
// (this one and the Etcd strategy), so the driver checks it: the
// StrategyPolicy's Valid condition turns False and BackupJobs through the
// strategy fail, naming the StrategyPolicy; no key is issued or rotated
// meanwhile.
//
// +kubebuilder:validation:XValidation:rule="self.provider == oldSelf.provider",message="provider is immutable: tenant keys of one provider cannot be found through another; delete the StrategyPolicy (the driver removes its tenant keys first) and create it again"
type CredentialBroker struct {
	// Provider is the S3 service's identity API.
	Provider CredentialBrokerProvider `json:"provider"`
	// AdminSecretRef names a Secret in the driver's namespace (never a
	// tenant's) with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY of the
	// platform credential that issues tenant keys and deletes snapshots.
	AdminSecretRef SecretReference `json:"adminSecretRef"`
	// AdminEndpoint is the URL of the provider's admin API when it differs
	// from the strategy's destination endpoint.
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

// Inspection configures what the driver does after a snapshot lands: it
// reads the snapshot in a Job, records a signed manifest (object counts per
// keyspace, resource and namespace) on the Backup, and compares it with the
// previous good Backup of the same application and Plan. A Backup whose
// content dropped beyond these thresholds is marked ContentDrop, and the
// previous good one is held from retention.
type Inspection struct {
	// Disabled skips inspection: Backups get no manifest and no
	// ContentDrop guard.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// MaxResourceDropPercent: a resource that loses more than this share
	// of its objects (and at least MinDroppedObjects of them) since the
	// previous good Backup marks the new one ContentDrop. Default 50.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxResourceDropPercent *int32 `json:"maxResourceDropPercent,omitempty"`
	// MinDroppedObjects keeps small resources from raising drops: a drop
	// of fewer objects is never one. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	MinDroppedObjects *int32 `json:"minDroppedObjects,omitempty"`
	// MaxNamespacesGone: more namespaces than this disappearing since the
	// previous good Backup marks the new one ContentDrop. Default 0 (any
	// namespace disappearing).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	MaxNamespacesGone *int32 `json:"maxNamespacesGone,omitempty"`
	// ExpiringResources are resources (as named in etcd's keys, e.g.
	// "events" for /registry/events/) whose objects expire on their own:
	// they are left out of the content-drop check (a quiet hour is not a
	// drop) and still counted in the manifest. Unset means events, leases
	// and masterleases; an empty list checks every resource.
	// +optional
	// +kubebuilder:default={events,leases,masterleases}
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ExpiringResources []string `json:"expiringResources"`
}

// Retention is the platform admin's defaults and bounds for the retention
// of tenants' Plans through the strategy (a tenant sets its Plan's own in
// annotations on the Plan). A Plan that sets nothing gets the defaults; a
// tenant's value above a bound is clamped to the bound, and the Plan's
// PolicyValid condition says so. Unset means no default (keep every
// Backup) and no bound; "keep everything" is above any bound, so with a
// bound set every Plan is pruned to it. The newest Ready Backup, Backups a
// restore reads and Backups held by a content drop are always kept.
//
// +kubebuilder:validation:XValidation:rule="!has(self.defaultKeepLast) || !has(self.maxKeepLast) || self.defaultKeepLast <= self.maxKeepLast",message="defaultKeepLast is at most maxKeepLast"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultMaxAge) || !has(self.maxMaxAge) || duration(self.defaultMaxAge) <= duration(self.maxMaxAge)",message="defaultMaxAge is at most maxMaxAge"
type Retention struct {
	// DefaultKeepLast is how many Backups, newest first, a Plan that sets
	// no keep-last keeps.
	// +optional
	// +kubebuilder:validation:Minimum=1
	DefaultKeepLast *int32 `json:"defaultKeepLast,omitempty"`
	// DefaultMaxAge is the age (for example 720h) beyond which a Plan that
	// sets no max-age deletes its Backups.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="defaultMaxAge is positive"
	DefaultMaxAge *metav1.Duration `json:"defaultMaxAge,omitempty"`
	// MaxKeepLast bounds how many Backups any Plan keeps.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxKeepLast *int32 `json:"maxKeepLast,omitempty"`
	// MaxMaxAge bounds how old any Plan's Backups grow.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="maxMaxAge is positive"
	MaxMaxAge *metav1.Duration `json:"maxMaxAge,omitempty"`
}

// StrategyPolicySpec is the platform admin's settings for the Backups taken
// through one Etcd strategy.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.credentialBroker) || has(self.credentialBroker)",message="credentialBroker cannot be removed: delete the StrategyPolicy to remove its tenant keys"
type StrategyPolicySpec struct {
	// DeletionPolicy is recorded on each Backup when it is taken: Retain
	// (default) keeps the S3 object when the Backup is deleted; Delete
	// removes it. Changing it changes new Backups only.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// AllowHTTPEndpoint lets the rendered endpoint use plain http://. The
	// default is https only: over http the snapshot and the requests signed
	// with the tenant's S3 keys cross the network unencrypted.
	// +optional
	AllowHTTPEndpoint bool `json:"allowHTTPEndpoint,omitempty"`
	// CredentialBroker, when set, gives each tenant namespace its own S3
	// key issued by the driver; the strategy's credentialsSecretRef is then
	// ignored and the EtcdSnapshot names the driver-owned Secret instead.
	// +optional
	CredentialBroker *CredentialBroker `json:"credentialBroker,omitempty"`
	// Inspection configures the manifest the driver records for each
	// Backup and the guard on content drops.
	// +optional
	// +kubebuilder:default={}
	Inspection *Inspection `json:"inspection,omitempty"`
	// Retention is the defaults and bounds of tenants' Plan retention.
	// +optional
	Retention *Retention `json:"retention,omitempty"`
	// PointInTime lets tenants capture every change of their etcd after
	// their newest Backup, within these bounds.
	// +optional
	PointInTime *PointInTime `json:"pointInTime,omitempty"`
}

// StrategyPolicyStatus is what the driver observed of the policy.
type StrategyPolicyStatus struct {
	// Conditions: Valid says whether the policy and its strategy go
	// together (StrategyPolicyConditionValid).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StrategyPolicy is the platform admin's settings for the Etcd strategy
// (strategy.backups.cozystack.io) of the same name: deletion policy, plain
// http, brokered per-tenant S3 keys, inspection thresholds and retention
// bounds. It is cluster-scoped, so only whoever may write cluster-scoped
// objects (the platform admin) sets them. A strategy without one gets every
// default: Retain, https only, the strategy's shared credentials Secret,
// inspection with the default thresholds, no retention default or bound.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=esp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Deletion",type=string,JSONPath=`.spec.deletionPolicy`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.credentialBroker.provider`
// +kubebuilder:printcolumn:name="HTTP",type=boolean,priority=1,JSONPath=`.spec.allowHTTPEndpoint`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StrategyPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +optional
	// +kubebuilder:default={}
	Spec StrategyPolicySpec `json:"spec"`
	// Status is what the driver observed.
	// +optional
	Status StrategyPolicyStatus `json:"status,omitempty"`
}

// StrategyPolicyList is a list of StrategyPolicies.
//
// +kubebuilder:object:root=true
type StrategyPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []StrategyPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&StrategyPolicy{}, &StrategyPolicyList{})
}
