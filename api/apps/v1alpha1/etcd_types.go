package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdKind is the application kind this driver backs up.
const EtcdKind = "Etcd"

// Etcd is a tenant's etcd application; Cozystack renders it through a Flux
// HelmRelease of the etcd chart. Spec and status are kept verbatim.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Etcd struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the chart values; opaque to the driver.
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
	// Status is Cozystack's report; opaque to the driver.
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// EtcdList is a list of Etcd applications.
//
// +kubebuilder:object:root=true
type EtcdList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the applications.
	Items []Etcd `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Etcd{}, &EtcdList{})
}
