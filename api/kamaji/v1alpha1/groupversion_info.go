// Package v1alpha1 mirrors the subset of Kamaji's kamaji.clastix.io/v1alpha1
// DataStore (which the etcd chart renders) and TenantControlPlane (which a
// restore fences and restarts) that the driver uses. Kamaji is not served
// by the Go module proxy, so the project keeps this small mirror; tests,
// the sandbox and the end-to-end suite serve Kamaji's own CRDs
// (config/crd/upstream/kamaji). Kamaji owns the real schema.
//
// +kubebuilder:object:generate=true
// +groupName=kamaji.clastix.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "kamaji.clastix.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
