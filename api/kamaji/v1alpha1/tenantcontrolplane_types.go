package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WritePermissions is Kamaji's read-only switch for a tenant control plane:
// each true flag makes Kamaji's admission webhook, installed in the tenant
// cluster, deny that operation (reads are never blocked). The JSON names
// are Kamaji's own (blockCreation, blockDeletion), not the ones its guide
// prints.
type WritePermissions struct {
	// BlockCreate denies creates.
	// +optional
	BlockCreate bool `json:"blockCreation,omitempty"`
	// BlockUpdate denies updates.
	// +optional
	BlockUpdate bool `json:"blockUpdate,omitempty"`
	// BlockDelete denies deletes.
	// +optional
	BlockDelete bool `json:"blockDeletion,omitempty"`
}

// Limited reports whether any operation is blocked.
func (w WritePermissions) Limited() bool { return w.BlockCreate || w.BlockUpdate || w.BlockDelete }

// TenantControlPlaneSpec is the subset of the spec the driver reads or
// writes. The driver only ever patches writePermissions, with a merge
// patch of that field, so the fields it does not mirror are never touched.
type TenantControlPlaneSpec struct {
	// DataStore names the DataStore the control plane should store in.
	// +optional
	DataStore string `json:"dataStore,omitempty"`
	// WritePermissions blocks writes through the control plane.
	// +optional
	WritePermissions WritePermissions `json:"writePermissions,omitempty"`
}

// StorageStatus says which DataStore the control plane uses now.
type StorageStatus struct {
	// DataStoreName is the DataStore in use.
	// +optional
	DataStoreName string `json:"dataStoreName,omitempty"`
}

// KubernetesVersionStatus is Kamaji's summary of the control plane.
type KubernetesVersionStatus struct {
	// Status is one of Unknown, Provisioning, Sleeping, WriteLimited,
	// CertificateAuthorityRotating, Upgrading, Migrating, Ready, NotReady.
	// +optional
	Status string `json:"status,omitempty"`
}

// KubernetesResourcesStatus holds Kamaji's view of the control plane's
// Kubernetes resources.
type KubernetesResourcesStatus struct {
	// Version summarises the control plane's state.
	// +optional
	Version KubernetesVersionStatus `json:"version,omitempty"`
}

// TenantControlPlaneStatus is the subset of Kamaji's report the driver reads.
type TenantControlPlaneStatus struct {
	// Storage says which DataStore is in use.
	// +optional
	Storage StorageStatus `json:"storage,omitempty"`
	// KubernetesResources summarises the control plane.
	// +optional
	KubernetesResources KubernetesResourcesStatus `json:"kubernetesResources,omitempty"`
}

// TenantControlPlane is a Kamaji-managed Kubernetes control plane (a
// Deployment of kube-apiserver, controller-manager and scheduler in the
// TenantControlPlane's namespace, named after it). Kamaji owns the schema
// (config/crd/upstream/kamaji); this mirror carries only what the driver
// uses.
//
// +kubebuilder:object:root=true
type TenantControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantControlPlaneSpec   `json:"spec,omitempty"`
	Status TenantControlPlaneStatus `json:"status,omitempty"`
}

// TenantControlPlaneList is a list of TenantControlPlanes.
//
// +kubebuilder:object:root=true
type TenantControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantControlPlane `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantControlPlane{}, &TenantControlPlaneList{})
}

// Labels Kamaji puts on a control plane's Deployment and Pods.
const (
	// NameLabel carries the TenantControlPlane's name.
	NameLabel = "kamaji.clastix.io/name"
	// ComponentLabel is "deployment" on the control plane's Pods.
	ComponentLabel = "kamaji.clastix.io/component"
	// ComponentDeployment is ComponentLabel's value on those Pods.
	ComponentDeployment = "deployment"
)
