package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CaptureProgressKind is the kind name of CaptureProgress objects.
const CaptureProgressKind = "CaptureProgress"

// CaptureGapReason says why a capture's chain ended (the capture step's
// Gap reasons, internal/tenantjobs/capture).
// +kubebuilder:validation:Enum=Compacted;RevisionGap;ClusterChanged;RevisionTooLarge;ChainEnded
type CaptureGapReason string

// CaptureProgressSpec is what the driver asked the capture to follow.
type CaptureProgressSpec struct {
	// Plan names the Plan whose application is captured.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Plan string `json:"plan"`
	// BaseBackup names the Backup the current chain follows.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	BaseBackup string `json:"baseBackup"`
	// BaseRevision is that Backup's revision: the chain holds every
	// revision after it.
	// +kubebuilder:validation:Minimum=1
	BaseRevision int64 `json:"baseRevision"`
}

// CaptureGap is why a chain ended and when the capture found it.
type CaptureGap struct {
	Reason CaptureGapReason `json:"reason"`
	At     metav1.MicroTime `json:"at"`
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// CaptureProgressStatus is what the capture Pod reports of its chain, at
// most once a segment (and about once a minute while the etcd is quiet),
// and the window and condition the driver derives from it.
// The Pod writes it with a token that may patch this one object's status
// and nothing else; tenants can run Pods as that ServiceAccount, so the
// driver reads it as tenant input: for the window shown and the lag,
// never for a restore (which verifies the chain in S3).
type CaptureProgressStatus struct {
	// BaseRevision is the base of the chain the capture writes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BaseRevision int64 `json:"baseRevision,omitempty"`
	// Segments counts the chain's durable segments.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Segments int64 `json:"segments,omitempty"`
	// NewestRevision is the newest durable revision, and NewestTime when
	// the capture received it (none before the first segment).
	// +optional
	// +kubebuilder:validation:Minimum=0
	NewestRevision int64 `json:"newestRevision,omitempty"`
	// +optional
	NewestTime *metav1.MicroTime `json:"newestTime,omitempty"`
	// ConfirmedAt is when the capture last saw the etcd still at
	// NewestRevision with nothing left to receive.
	// +optional
	ConfirmedAt *metav1.MicroTime `json:"confirmedAt,omitempty"`
	// Gap, once set, says the chain ended at NewestRevision.
	// +optional
	Gap *CaptureGap `json:"gap,omitempty"`
	// UpdatedAt is when the capture wrote this status.
	// +optional
	UpdatedAt *metav1.MicroTime `json:"updatedAt,omitempty"`

	// Window is the recoverable window as the driver shows it (the
	// driver writes it, the capture never does).
	// +optional
	Window *CaptureWindow `json:"window,omitempty"`
	// Conditions are the driver's: Capturing.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CaptureWindow is the span a restore to a point can reach: from the
// base Backup of the oldest chain that runs without a gap into the
// current one, to the newest change the capture made durable (or the
// last time it saw the etcd with nothing more to send).
type CaptureWindow struct {
	// From is when the window's first base Backup was taken.
	From metav1.Time `json:"from"`
	// FromBackup names that Backup.
	// +kubebuilder:validation:MaxLength=253
	FromBackup string `json:"fromBackup"`
	// To is the newest point the capture made durable (none yet: the
	// window is the base Backup alone).
	// +optional
	To *metav1.MicroTime `json:"to,omitempty"`
}

// The CaptureProgress's condition and its reasons.
const (
	// CaptureConditionCapturing is True while the capture follows its
	// etcd within the admin's maxLagSeconds.
	CaptureConditionCapturing = "Capturing"
	// CaptureReasonFollowing: the newest durable change is recent.
	CaptureReasonFollowing = "Following"
	// CaptureReasonStarting: the capture has not reported its chain yet.
	CaptureReasonStarting = "Starting"
	// CaptureReasonStalled: the newest durable change is older than
	// maxLagSeconds.
	CaptureReasonStalled = "Stalled"
	// CaptureReasonGap: the chain ended (the watch fell behind a
	// compaction, another cluster answered, ...): the window ends there
	// and a new base Backup is taken.
	CaptureReasonGap = "Gap"
	// CaptureReasonRefused: the driver cannot run the capture (the base
	// Backup's location is refused, or an object at the capture's name is
	// not the driver's); the message says what to do.
	CaptureReasonRefused = "Refused"
	// CaptureReasonBaseGone: the Backup the chain follows is gone (its
	// chain is deleted with it) or no longer good, and no other good,
	// inspected Backup of the Plan remains: the capture is stopped until
	// the next one.
	CaptureReasonBaseGone = "BaseGone"
)

// CaptureProgress is the record of one point-in-time capture: the driver
// creates it (and its spec) beside the capture Deployment in the tenant's
// namespace, the capture Pod reports its chain's progress in its status,
// and the driver watches it, so it learns the newest durable change
// without reading S3 or polling. One per Plan that turned capture on,
// named with the driver's key like the Deployment.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=ecp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.spec.plan`
// +kubebuilder:printcolumn:name="Base",type=integer,JSONPath=`.spec.baseRevision`
// +kubebuilder:printcolumn:name="Newest",type=integer,JSONPath=`.status.newestRevision`
// +kubebuilder:printcolumn:name="Received",type=date,JSONPath=`.status.newestTime`
// +kubebuilder:printcolumn:name="Gap",type=string,JSONPath=`.status.gap.reason`
// +kubebuilder:printcolumn:name="Window-From",type=date,JSONPath=`.status.window.from`,priority=1
// +kubebuilder:printcolumn:name="Window-To",type=date,JSONPath=`.status.window.to`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CaptureProgress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CaptureProgressSpec `json:"spec"`
	// +optional
	Status CaptureProgressStatus `json:"status,omitempty"`
}

// CaptureProgressList is a list of CaptureProgress objects.
//
// +kubebuilder:object:root=true
type CaptureProgressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CaptureProgress `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CaptureProgress{}, &CaptureProgressList{})
}
