package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationSelector picks the application kind a strategy entry serves.
type ApplicationSelector struct {
	// APIGroup of the application kind; empty means apps.cozystack.io.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`
	// Kind of the application, matched exactly.
	Kind string `json:"kind"`
}

// BackupClassStrategy binds one application kind to a strategy object.
type BackupClassStrategy struct {
	// StrategyRef names the cluster-scoped strategy object (for example
	// strategy.backups.cozystack.io/Etcd) that says how to back up.
	StrategyRef TypedLocalObjectReference `json:"strategyRef"`
	// Application is the kind this entry applies to.
	Application ApplicationSelector `json:"application"`
	// Parameters are passed to the strategy's templates as .Parameters.
	// They are recorded on every Backup, so they must not hold secrets.
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
}

// BackupClassSpec lists the strategies of a class; the first entry whose
// application matches a job's application wins.
type BackupClassSpec struct {
	// Strategies, matched in order.
	Strategies []BackupClassStrategy `json:"strategies"`
}

// StrategyFor returns the entry of the class for application app: the
// first whose (defaulted) group and kind match app's.
func (c *BackupClass) StrategyFor(app TypedLocalObjectReference) (BackupClassStrategy, bool) {
	app = NormalizeApplicationRef(app)
	for _, s := range c.Spec.Strategies {
		group := DefaultApplicationAPIGroup
		if s.Application.APIGroup != nil && *s.Application.APIGroup != "" {
			group = *s.Application.APIGroup
		}
		if group == *app.APIGroup && s.Application.Kind == app.Kind {
			return s, true
		}
	}
	return BackupClassStrategy{}, false
}

// BackupClassStatus is the observed state of a BackupClass.
type BackupClassStatus struct {
	// Conditions of the class.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupClass is an admin-owned, cluster-scoped binding from application
// kinds to backup strategies. Tenants name it from BackupJobs and Plans.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type BackupClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired binding.
	Spec BackupClassSpec `json:"spec,omitempty"`
	// Status is the observed state.
	Status BackupClassStatus `json:"status,omitempty"`
}

// BackupClassList is a list of BackupClasses.
//
// +kubebuilder:object:root=true
type BackupClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the BackupClasses.
	Items []BackupClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupClass{}, &BackupClassList{})
}
