// Package v1alpha1 holds the backups.cozystack.io/v1alpha1 API: the
// application-agnostic backup objects (BackupClass, Plan, BackupJob, Backup,
// RestoreJob) that tenants and admins write and that strategy drivers such as
// this one act on. The schema is a compatible superset of the Cozystack one:
// every upstream field keeps its name, type and meaning; additions are optional.
//
// +kubebuilder:object:generate=true
// +groupName=backups.cozystack.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "backups.cozystack.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
