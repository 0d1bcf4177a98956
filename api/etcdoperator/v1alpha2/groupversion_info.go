// Package v1alpha2 mirrors the subset of the etcd-operator.cozystack.io/v1alpha2
// API (EtcdCluster, EtcdSnapshot) that this driver and the sandbox's
// stand-in operator read and write. The operator owns the schema: no CRD is
// generated from this package. Tests, the sandbox and the end-to-end suite
// install the operator's own CRDs (config/crd/upstream/etcd-operator), so
// every object built from these types meets the real validation rules
// (spec.version required, typed spec.options, immutable spec.bootstrap and
// spec.tls, a non-empty restore key, exactly one snapshot destination) and
// loses every field the real schema does not know.
//
// Fields are added here only when a reader or writer needs them; the driver
// re-creates clusters from unstructured captures, never from these types,
// so nothing it does not mirror is lost.
//
// +kubebuilder:object:generate=true
// +groupName=etcd-operator.cozystack.io
package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "etcd-operator.cozystack.io", Version: "v1alpha2"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
