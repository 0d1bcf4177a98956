// Package v1alpha2 mirrors the subset of the etcd-operator.cozystack.io/v1alpha2
// API (EtcdCluster, EtcdSnapshot) that this driver reads and writes. The
// operator owns the real schema; the CRDs generated from this package exist
// for tests and the sandbox, and keep the upstream validation rules the driver
// relies on: spec.bootstrap cannot be added, removed or changed, a restore
// source key is never empty, and a snapshot has exactly one destination.
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
