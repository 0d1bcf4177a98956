package v1alpha1

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
	// BackupReasonUnresolvableArtifact: the Backup does not say where its
	// object is (or says it unusably), so it cannot be deleted; an admin may
	// skip the object deletion with an annotation.
	BackupReasonUnresolvableArtifact = "UnresolvableArtifact"
	// BackupReasonInUseByRestore: an unfinished RestoreJob reads the
	// Backup, so its object is kept until the restore ends.
	BackupReasonInUseByRestore = "InUseByRestore"
	// BackupReasonSnapshotDeleteFailed: deleting the EtcdSnapshot failed.
	BackupReasonSnapshotDeleteFailed = "SnapshotDeleteFailed"
)
