// Package etcdmember is the sandbox's typed view of the etcd-operator's
// EtcdMember (etcd-operator.cozystack.io/v1alpha2): the per-member object
// the operator creates for each member of an EtcdCluster, owned by the
// cluster, owning the member's data PVC, and holding the
// etcd-operator.cozystack.io/member-cleanup finalizer. Only the stand-in
// operator uses it (the driver never reads members), so it lives here and
// not in api/etcdoperator; the schema is the operator's own CRD
// (config/crd/upstream/etcd-operator), and these types carry only the
// fields the stand-in reads or writes.
//
// +kubebuilder:object:generate=true
// +groupName=etcd-operator.cozystack.io
package etcdmember

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

var (
	// GroupVersion is the etcd-operator's API group and version.
	GroupVersion = schema.GroupVersion{Group: "etcd-operator.cozystack.io", Version: "v1alpha2"}

	// SchemeBuilder registers EtcdMember with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds EtcdMember to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Labels and the finalizer the operator puts on members and their objects.
const (
	// ClusterLabel names the member's EtcdCluster on members and PVCs.
	ClusterLabel = "etcd-operator.cozystack.io/cluster"
	// InstanceLabel is app.kubernetes.io/instance, also the cluster name;
	// the driver waits for the PVCs carrying it to be gone.
	InstanceLabel = "app.kubernetes.io/instance"
	// ComponentLabel is app.kubernetes.io/component, the member name.
	ComponentLabel = "app.kubernetes.io/component"
	// Finalizer keeps a member until it is removed from etcd.
	Finalizer = "etcd-operator.cozystack.io/member-cleanup"
	// ConditionReady is the member's single condition.
	ConditionReady = "Ready"
)

// Spec is the member as the cluster controller created it.
type Spec struct {
	// ClusterName is the owning EtcdCluster.
	ClusterName string `json:"clusterName"`
	// Version of etcd.
	Version string `json:"version"`
	// Storage of the member's volume.
	Storage etcdv1alpha2.StorageSpec `json:"storage"`
	// Options are etcd server flags copied from the cluster.
	// +optional
	Options *etcdv1alpha2.EtcdOptions `json:"options,omitempty"`
	// Bootstrap marks the seed, which founds the cluster.
	// +optional
	Bootstrap bool `json:"bootstrap,omitempty"`
	// InitialCluster is name=peerURL,... for --initial-cluster; empty
	// until the cluster controller has registered the member with etcd.
	InitialCluster string `json:"initialCluster"`
	// ClusterToken is --initial-cluster-token.
	ClusterToken string `json:"clusterToken"`
	// Restore is carried by the seed only, when the cluster restores.
	// +optional
	Restore *etcdv1alpha2.RestoreSpec `json:"restore,omitempty"`
}

// Status is the member's report.
type Status struct {
	// MemberID is etcd's ID of the member, in hex.
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// IsVoter is false while the member is a learner.
	// +optional
	IsVoter bool `json:"isVoter,omitempty"`
	// PVCName is the member's data PVC.
	// +optional
	PVCName string `json:"pvcName,omitempty"`
	// Conditions: Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdMember is one member of an EtcdCluster.
//
// +kubebuilder:object:root=true
type EtcdMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec,omitempty"`
	Status Status `json:"status,omitempty"`
}

// EtcdMemberList is a list of EtcdMembers.
//
// +kubebuilder:object:root=true
type EtcdMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdMember `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdMember{}, &EtcdMemberList{})
}
