// Package v1alpha1 mirrors the apps.cozystack.io/v1alpha1 Etcd application
// kind. The driver reads its metadata only (for templates and ownership); the
// CRD generated from this package exists for tests and the sandbox.
//
// +kubebuilder:object:generate=true
// +groupName=apps.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "apps.cozystack.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
