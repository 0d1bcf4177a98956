// Package v1alpha1 holds the strategy.backups.cozystack.io/v1alpha1 Etcd
// strategy: the admin-owned, templated description of where etcd snapshots go.
//
// The kind is Cozystack's: its CRD is the one Cozystack ships, pinned in
// config/crd/upstream/cozystack and installed as is; no CRD is generated
// from these types. They mirror exactly the fields that CRD serves (a test,
// test/crdmirror, fails on any other), because the API server prunes the
// rest. The driver's own settings for a strategy are the StrategyPolicy of
// its name (api/driver/v1alpha1).
//
// +kubebuilder:object:generate=true
// +groupName=strategy.backups.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "strategy.backups.cozystack.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
