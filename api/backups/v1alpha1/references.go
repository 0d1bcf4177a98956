package v1alpha1

// DefaultApplicationAPIGroup is the API group an application reference means
// when it leaves apiGroup empty.
const DefaultApplicationAPIGroup = "apps.cozystack.io"

// TypedLocalObjectReference names an object of a given kind in the same
// namespace (or, for cluster-scoped kinds, in the cluster).
// +structType=atomic
type TypedLocalObjectReference struct {
	// APIGroup of the referenced kind. Empty means the core group for most
	// references and apps.cozystack.io for application references.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	APIGroup *string `json:"apiGroup,omitempty"`
	// Kind of the referenced object.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the referenced object.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// LocalObjectReference names an object of a known kind in the same namespace.
// +structType=atomic
type LocalObjectReference struct {
	// Name of the referenced object.
	// +default=""
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// APIGroupOrEmpty returns the reference's API group, or "" when unset.
func (r TypedLocalObjectReference) APIGroupOrEmpty() string {
	if r.APIGroup == nil {
		return ""
	}
	return *r.APIGroup
}

// NormalizeApplicationRef returns a copy of ref whose apiGroup is filled with
// DefaultApplicationAPIGroup when it was nil or empty.
func NormalizeApplicationRef(ref TypedLocalObjectReference) TypedLocalObjectReference {
	if ref.APIGroup == nil || *ref.APIGroup == "" {
		group := DefaultApplicationAPIGroup
		ref.APIGroup = &group
	}
	return ref
}
