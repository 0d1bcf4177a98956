package v1alpha1

// BackupConditionVerified says whether the Etcd driver can verify the
// Backup's provenance (that it recorded exactly what the Backup says). It is
// for people and tools: the driver itself verifies the signature every time
// it acts on a Backup and never trusts this condition.
const BackupConditionVerified = "Verified"

// Reasons of the Verified condition.
const (
	// BackupReasonProvenanceVerified: the driver's signature matches.
	BackupReasonProvenanceVerified = "ProvenanceVerified"
	// BackupReasonUnverified: no signature, or one that does not match; the
	// message says which. Deleting the Backup keeps its S3 object, a
	// restore from it must match the namespace's strategy, and retention
	// ignores it.
	BackupReasonUnverified = "Unverified"
)

// BackupConditionCleanup is the condition type a driver sets on a Backup
// being deleted while its cleanup (removing the snapshot object) cannot
// finish; it is False and its reason says why.
const BackupConditionCleanup = "Cleanup"

// Reasons of the Backup's Cleanup condition (and of its Events).
const (
	// BackupReasonCredentialsUnavailable: the Secret named in the Backup
	// could not be read or lacks the S3 keys; retried with backoff.
	BackupReasonCredentialsUnavailable = "CredentialsUnavailable"
	// BackupReasonObjectDeleteFailed: the S3 delete failed; retried with
	// backoff.
	BackupReasonObjectDeleteFailed = "ObjectDeleteFailed"
	// BackupReasonChainDeleteFailed: deleting the chain of captured
	// changes that follows the Backup (point-in-time restore) failed, or
	// found objects still coming after its bound for one attempt; retried
	// with backoff, before the Backup's own object is deleted.
	BackupReasonChainDeleteFailed = "ChainDeleteFailed"
	// BackupReasonInUseByRestore: an unfinished RestoreJob reads the
	// Backup, so its object is kept until the restore ends.
	BackupReasonInUseByRestore = "InUseByRestore"
	// BackupReasonSnapshotDeleteFailed: deleting the EtcdSnapshot failed.
	BackupReasonSnapshotDeleteFailed = "SnapshotDeleteFailed"
	// BackupReasonObjectKeptUnverified: the Backup is not verified, so its
	// deletion kept the S3 object it names (whoever wrote the Backup may
	// have pointed it at data that is not theirs).
	BackupReasonObjectKeptUnverified = "ObjectKeptUnverified"
	// BackupReasonObjectKeptCredentialsGone: the credentials Secret the
	// Backup names does not exist, so its deletion kept the S3 object
	// rather than wait for a Secret that may never come back.
	BackupReasonObjectKeptCredentialsGone = "ObjectKeptCredentialsGone"
	// BackupReasonObjectKeptNamespaceTerminating: the Backup's namespace is
	// being deleted and the object could not be deleted at once, so it was
	// kept rather than hold the namespace.
	BackupReasonObjectKeptNamespaceTerminating = "ObjectKeptNamespaceTerminating"
)

// BackupConditionInspected says whether the Backup's snapshot was
// inspected: True with a verified manifest, False while it waits or when
// inspection failed (reason says which). A Backup whose inspection failed
// never counts as a good one.
const BackupConditionInspected = "Inspected"

// Reasons of the Inspected condition.
const (
	BackupReasonInspected          = "Inspected"
	BackupReasonInspectionPending  = "InspectionPending"
	BackupReasonInspectionFailed   = "InspectionFailed"
	BackupReasonInspectionRefused  = "InspectionRefused"
	BackupReasonInspectionDisabled = "InspectionDisabled"
	// BackupReasonInspectionRetrying: the inspector failed for a reason
	// of its own (its Pod killed or out of time, S3 errors, arguments it
	// refused, a Job an earlier release built): no evidence against the
	// Backup, which still counts as good; the driver inspects it again
	// after a backoff.
	BackupReasonInspectionRetrying = "InspectionRetrying"
)

// BackupReasonRecordsMigrated is the reason of the Event on a Backup
// whose manifest or last rehearsal the driver moved from the fields of its
// earlier Backup CRD (status.manifest, status.lastRehearsal) to
// status.underlyingResources.
const BackupReasonRecordsMigrated = "RecordsMigrated"

// BackupConditionContentDrop is True when the Backup holds markedly less
// than the previous good Backup of its application (a resource lost more
// than the strategy's threshold of its objects, or namespaces
// disappeared); the message names what dropped and which Backup retention
// keeps until a person releases it.
const BackupConditionContentDrop = "ContentDrop"

// Reasons of the ContentDrop condition.
const (
	BackupReasonContentDropped   = "ContentDropped"
	BackupReasonContentUnchanged = "ContentKept"
)
