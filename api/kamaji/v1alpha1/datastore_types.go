package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Driver is the kind of database a DataStore points at.
// +kubebuilder:validation:Enum=etcd;MySQL;PostgreSQL;NATS
type Driver string

// EtcdDriver is the only driver the etcd chart renders.
const EtcdDriver Driver = "etcd"

// SecretReference locates one key of a Secret.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the Secret.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// KeyPath is the key inside the Secret's data.
	// +kubebuilder:validation:MinLength=1
	KeyPath string `json:"keyPath"`
}

// ContentRef is where a piece of TLS material comes from. Kamaji also
// accepts inline content; the chart only renders Secret references.
type ContentRef struct {
	// SecretReference locates the material in a Secret.
	// +optional
	SecretRef *SecretReference `json:"secretReference,omitempty"`
	// Content is the material inline.
	// +optional
	Content []byte `json:"content,omitempty"`
}

// CertificatePrivateKeyPair is a certificate with its private key.
type CertificatePrivateKeyPair struct {
	// Certificate in PEM.
	Certificate ContentRef `json:"certificate"`
	// PrivateKey in PEM.
	// +optional
	PrivateKey *ContentRef `json:"privateKey,omitempty"`
}

// TLSConfig is how tenant control planes authenticate to the datastore.
type TLSConfig struct {
	// CertificateAuthority that signed the server and client certificates;
	// Kamaji signs further client certificates with its key.
	CertificateAuthority CertificatePrivateKeyPair `json:"certificateAuthority"`
	// ClientCertificate the control planes present.
	// +optional
	ClientCertificate *CertificatePrivateKeyPair `json:"clientCertificate,omitempty"`
}

// DataStoreSpec is the datastore a tenant control plane stores its state in.
type DataStoreSpec struct {
	// Driver of the datastore.
	Driver Driver `json:"driver"`
	// Endpoints are host:port pairs of the datastore.
	// +kubebuilder:validation:MinItems=1
	Endpoints []string `json:"endpoints"`
	// TLSConfig for the connection.
	// +optional
	TLSConfig *TLSConfig `json:"tlsConfig,omitempty"`
}

// DataStoreStatus is Kamaji's report.
// +kubebuilder:pruning:PreserveUnknownFields
type DataStoreStatus struct {
	// UsedBy lists the tenant control planes using the datastore.
	// +optional
	UsedBy []string `json:"usedBy,omitempty"`
}

// DataStore points Kamaji tenant control planes at a database.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type DataStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the datastore.
	Spec DataStoreSpec `json:"spec"`
	// Status is Kamaji's report.
	// +optional
	Status DataStoreStatus `json:"status,omitempty"`
}

// DataStoreList is a list of DataStores.
//
// +kubebuilder:object:root=true
type DataStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the datastores.
	Items []DataStore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DataStore{}, &DataStoreList{})
}
