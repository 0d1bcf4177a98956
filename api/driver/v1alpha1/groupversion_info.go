// Package v1alpha1 holds the etcd-backup-driver.cozystack.io/v1alpha1 API:
// the driver's own kinds, for what is the driver's alone and has no place in
// Cozystack's backups.cozystack.io and strategy.backups.cozystack.io kinds.
// Cozystack installs those CRDs and its API server prunes every field they
// do not serve, so the driver adds no field to them; the platform admin's
// settings for an Etcd strategy live here, in a StrategyPolicy of the
// strategy's name.
//
// +kubebuilder:object:generate=true
// +groupName=etcd-backup-driver.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "etcd-backup-driver.cozystack.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
