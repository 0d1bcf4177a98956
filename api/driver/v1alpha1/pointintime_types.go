package v1alpha1

// PointInTime is the platform admin's bounds for point-in-time capture
// through the strategy: a tenant turns capture on for a Plan's application
// with the Plan's etcd-backup-driver.cozystack.io/point-in-time annotation,
// and the driver then runs one capture Pod in the tenant's namespace that
// writes every change of the etcd after the Plan's newest good Backup to
// S3 (docs/point-in-time.md). Nothing is captured unless Enabled.
type PointInTime struct {
	// Enabled lets tenants turn capture on for the Plans of this
	// strategy. Default false: a Plan asking for it is told the platform
	// does not offer it.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// SegmentSeconds is the longest a change waits before it is made
	// durable in S3 (a segment is cut at most this long after its first
	// change). Default 10, between 1 and 600.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	SegmentSeconds *int32 `json:"segmentSeconds,omitempty"`
	// MaxSegmentBytes cuts a segment once its changes reach this many
	// bytes before compression. Default 4194304 (4 MiB), between 65536
	// and 50331648 (48 MiB).
	// +optional
	// +kubebuilder:default=4194304
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=50331648
	MaxSegmentBytes *int64 `json:"maxSegmentBytes,omitempty"`
	// MaxLagSeconds is how far behind now the newest durable change of a
	// followed application may fall before its CaptureProgress's
	// Capturing condition says Stalled and the EtcdBackupPointInTimeLagging
	// alert fires (the driver's etcd_backup_driver_capture_max_lag_seconds
	// carries it to the rule, beside etcd_backup_driver_capture_lag_seconds).
	// Default 300, at least 30.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=30
	MaxLagSeconds *int32 `json:"maxLagSeconds,omitempty"`
	// MemoryMiB is the capture container's memory request and limit, in
	// MiB. Default 128, between 96 and 4096: whatever the etcd sends, the
	// capture holds at most about 62 MiB above the process's own few.
	// +optional
	// +kubebuilder:default=128
	// +kubebuilder:validation:Minimum=96
	// +kubebuilder:validation:Maximum=4096
	MemoryMiB *int32 `json:"memoryMiB,omitempty"`
}
