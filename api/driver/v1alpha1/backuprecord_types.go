package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The driver's records about a Backup. Cozystack's Backup CRD serves no
// field of the driver's, so they live in the Backup's
// status.underlyingResources (a preserve-unknown, self-typed object: the
// EtcdBackupSnapshot both Etcd drivers write, which the peer decodes with
// json.Unmarshal and so reads past them), beside the peer's kind,
// apiVersion, destination and parameters: BackupRecordManifest holds the
// manifest, BackupRecordLastRehearsal the last rehearsal,
// BackupRecordInspectionRetry an inspection to try again
// (InspectionRetry). internal/artifact
// is their one reader and writer. These types are not a kind: nothing but
// the driver validates them, and it reads them as what a tenant may have
// written (the manifest is signed, internal/provenance).

// Members of a Backup's status.underlyingResources that are the driver's.
const (
	BackupRecordManifest        = "manifest"
	BackupRecordLastRehearsal   = "lastRehearsal"
	BackupRecordInspectionRetry = "inspectionRetry"
)

// Bounds of a manifest: it lives in the Backup's status and travels from
// the inspection Pod in its termination message (at most 4096 bytes), so
// every list is short and cut to its largest entries.
const (
	// ManifestMaxKeyspaces is how many Kubernetes keyspaces (the default
	// /registry one, or Kamaji's per-control-plane prefixes on a shared
	// DataStore) a manifest lists, largest first.
	ManifestMaxKeyspaces = 4
	// ManifestMaxResources is how many resources a keyspace lists, largest
	// first.
	ManifestMaxResources = 24
	// ManifestMaxNamespaces is how many namespaces a keyspace lists (the
	// top N by object count).
	ManifestMaxNamespaces = 8
	// ManifestMaxName bounds a resource's, a namespace's or a prefix's name.
	ManifestMaxName = 63
)

// BackupManifest says what a Backup's snapshot holds, as the driver's
// inspection read it from the stored bytes. It is signed together with
// the Backup's provenance (Signature): a manifest copied from another
// Backup, or edited, does not verify.
type BackupManifest struct {
	// InspectedAt is when the inspection read the snapshot.
	InspectedAt metav1.Time `json:"inspectedAt"`
	// Revision is the revision the snapshot restores at.
	Revision int64 `json:"revision"`
	// CompactedRevision is the snapshot's compaction mark (0: none).
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
	// Keys is how many keys the snapshot holds at its revision (deleted
	// keys not counted).
	Keys int64 `json:"keys"`
	// DBSizeBytes is the size of the database (the snapshot without its
	// integrity trailer).
	DBSizeBytes int64 `json:"dbSizeBytes"`
	// Keyspaces are the Kubernetes keyspaces found, largest first. Empty
	// when the snapshot holds no Kubernetes.
	Keyspaces []KeyspaceManifest `json:"keyspaces,omitempty"`
	// Truncated is true when lists were cut to their bounds.
	Truncated bool `json:"truncated,omitempty"`
	// Signature binds the manifest to the Backup's provenance signature.
	Signature string `json:"signature,omitempty"`
}

// KeyspaceManifest counts the Kubernetes objects under one prefix.
type KeyspaceManifest struct {
	// Prefix is the keyspace's etcd prefix: "/registry" for a
	// kube-apiserver with the default --etcd-prefix, "/<ns>_<name>" for a
	// Kamaji control plane on a shared DataStore.
	Prefix string `json:"prefix"`
	// Objects is how many objects the keyspace holds.
	Objects int64 `json:"objects"`
	// Namespaces is how many namespaces exist (objects of "namespaces").
	Namespaces int64 `json:"namespaces"`
	// Resources counts objects per resource ("pods", "deployments",
	// "apps.example.com/widgets"), largest first.
	Resources []ObjectCount `json:"resources,omitempty"`
	// TopNamespaces counts namespaced objects per namespace, largest first.
	TopNamespaces []ObjectCount `json:"topNamespaces,omitempty"`
	// NamespaceNames lists every namespace when there are at most
	// ManifestMaxNamespaces*2 of them, so a comparison can say which
	// disappeared; empty (with Namespaces set) when there are more.
	NamespaceNames []string `json:"namespaceNames,omitempty"`
}

// ObjectCount is a name and how many objects it has.
type ObjectCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// ContentDropHoldAnnotation is set by the driver on the last good Backup
// taken before a drop, naming the Backup that dropped. Retention (a Plan's
// keepLast and maxAge) never deletes a Backup carrying it; removing the
// annotation is how a person says the drop was intended.
const ContentDropHoldAnnotation = "backups.cozystack.io/held-for-content-drop"

// ContentDropHoldMarkAnnotation carries the driver's signature of its
// ContentDropHoldAnnotation (internal/contentdrop: Hold, HeldByDriver):
// retention keeps any held Backup, but what a platform alert counts (the
// held-for-content-drop gauge) is only a hold the driver placed, since a
// tenant can write annotations.
const ContentDropHoldMarkAnnotation = "etcd-backup-driver.cozystack.io/held-for-content-drop-mark"

// InspectionRetry is the driver's record of an inspection that failed
// for a reason of the inspector's own (its Pod killed, its deadline, S3
// errors, an argument the step refused): not evidence against the
// Backup's bytes, so the Backup is not condemned and the inspection is
// tried again after a backoff. A tenant who edits it only changes when
// its own Backup is inspected again.
type InspectionRetry struct {
	// Attempts is how many inspections failed so.
	Attempts int32 `json:"attempts"`
	// Job is the UID of the failed Job the last attempt counted (so a
	// crash before the Job's deletion does not count it twice).
	Job string `json:"job,omitempty"`
	// NotBefore is when the driver inspects again.
	NotBefore metav1.Time `json:"notBefore"`
	// Message says why the last attempt failed (bounded).
	Message string `json:"message,omitempty"`
}

// RehearsalRecord is the outcome of a rehearsal (a dry-run RestoreJob) of
// a Backup, as recorded on the Backup and on its Plan.
type RehearsalRecord struct {
	// RestoreJob names the dry-run RestoreJob.
	RestoreJob string `json:"restoreJob"`
	// Backup names the rehearsed Backup (on a Plan's status).
	Backup string `json:"backup,omitempty"`
	// PointInTime is the point a dry run rehearsed a restore to
	// (spec.options.pointInTime), empty for the Backup as it was taken.
	// +optional
	PointInTime string `json:"pointInTime,omitempty"`
	// Succeeded is whether the rehearsal booted the staged snapshot and
	// read it back.
	Succeeded bool `json:"succeeded"`
	// CompletedAt is when it ended.
	CompletedAt metav1.Time `json:"completedAt"`
	// Message says what happened (bounded).
	Message string `json:"message,omitempty"`
}

// RehearsalReport is what a dry-run RestoreJob found: what a real restore
// of the Backup would change on the live cluster.
type RehearsalReport struct {
	// RevisionBefore is the live cluster's revision when rehearsed (0:
	// could not be read).
	// +optional
	RevisionBefore int64 `json:"revisionBefore,omitempty"`
	// RevisionAfter is the revision the restored cluster would start at.
	RevisionAfter int64 `json:"revisionAfter"`
	// KeysBefore and KeysAfter count the keys now and after.
	// +optional
	KeysBefore int64 `json:"keysBefore,omitempty"`
	KeysAfter  int64 `json:"keysAfter"`
	// Resources are the resources whose counts differ (now and after),
	// largest change first.
	// +optional
	// +kubebuilder:validation:MaxItems=24
	Resources []CountChange `json:"resources,omitempty"`
	// NamespacesReturning exist in the Backup but not in the live cluster:
	// a restore brings them back.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	NamespacesReturning []string `json:"namespacesReturning,omitempty"`
	// NamespacesVanishing exist live but not in the Backup: a restore
	// removes them.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	NamespacesVanishing []string `json:"namespacesVanishing,omitempty"`
	// Truncated is true when lists were cut to their bounds.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// CountChange is a resource's object count now and after a restore.
type CountChange struct {
	// +kubebuilder:validation:MaxLength=63
	Name   string `json:"name"`
	Before int64  `json:"before"`
	After  int64  `json:"after"`
}
