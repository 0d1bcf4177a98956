package v1alpha1

// Labels and finalizers shared by the backups API and its drivers.
const (
	// OwningJobNameLabel names the BackupJob that made an object.
	OwningJobNameLabel = "backups.cozystack.io/owned-by.BackupJobName"
	// OwningJobNamespaceLabel names the namespace of the BackupJob that made an object.
	OwningJobNamespaceLabel = "backups.cozystack.io/owned-by.BackupJobNamespace"
	// OwningJobUIDLabel carries the UID of the BackupJob that made an object,
	// so that a re-created BackupJob of the same name never adopts it.
	OwningJobUIDLabel = "backups.cozystack.io/owned-by.BackupJobUID"
	// ApplicationNameLabel names the application a Backup or BackupJob is for.
	ApplicationNameLabel = "backups.cozystack.io/application"
	// PlanNameLabel names the Plan that scheduled a BackupJob or Backup.
	PlanNameLabel = "backups.cozystack.io/plan"
	// SafetyBackupLabel marks a Backup taken by a RestoreJob before it
	// destroyed anything; its value is the RestoreJob name.
	SafetyBackupLabel = "backups.cozystack.io/safety-for-restore"
	// SnapshotHistoryLabel is set on an EtcdSnapshot when the driver hands
	// it to its Backup: it is then history, which the driver does not
	// cache (its caches select EtcdSnapshots without this label).
	SnapshotHistoryLabel = "etcd-backup-driver.cozystack.io/history"

	// CleanupFinalizer is the finalizer the Cozystack core shares between
	// drivers on Backups and RestoreJobs; its own Backup controller adds and
	// removes it on every Backup, so the Etcd driver never relies on it
	// (see BackupCleanupFinalizer). The driver only removes it from Etcd
	// Backups it has cleaned up (earlier releases added it).
	CleanupFinalizer = "backups.cozystack.io/cleanup"
	// BackupCleanupFinalizer is the Etcd driver's own finalizer on Etcd
	// Backups: deleting one waits until the driver has removed its
	// EtcdSnapshot and, by the recorded policy, its S3 object.
	BackupCleanupFinalizer = "strategy.backups.cozystack.io/etcd-backup-cleanup"
	// BackupJobSnapshotFinalizer is on an Etcd BackupJob from just before
	// its EtcdSnapshot is created until the job ends: deleting the job
	// while the snapshot runs waits for the snapshot, so an object that
	// lands in S3 is recorded as a Backup instead of orphaned. It is
	// released at the backup deadline whatever the snapshot does.
	BackupJobSnapshotFinalizer = "strategy.backups.cozystack.io/etcd-snapshot-in-flight"
)

// Condition types written on BackupJobs and RestoreJobs.
const (
	// ConditionReady is True when the job succeeded and False while it waits
	// or after it failed; the reason tells which.
	ConditionReady = "Ready"
)
