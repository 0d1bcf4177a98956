// Package manifest is what the driver knows about a BackupManifest, the
// bounded summary of what an etcd holds: Counter counts keys into it (the
// inspection of a snapshot, the rehearsal's read-back and the live census
// all count with it), ShrinkKeyspaces cuts it to fit a report, and
// CheckKeyspaces refuses what no Counter makes. It has no Kubernetes
// client: etcd-stage links it.
package manifest
