package manager

// Permissions the manager itself needs, independent of any controller:
// leader election keeps its Lease in the driver's own namespace (the chart
// binds this Role there; the namespace below is only a placeholder), the
// provenance keyring creates its Secret there on first start, and the
// controllers' event recorders write Events in the namespaces of the objects
// they report on, through both the core and the events.k8s.io API.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=etcd-backup-driver
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create,namespace=etcd-backup-driver
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
