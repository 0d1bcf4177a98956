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
	// InspectionLabel marks the inspection Job of a Backup and its Pods;
	// its value is the Backup's UID.
	InspectionLabel = "backups.cozystack.io/inspection"
	// DrillLabel ("true") marks a dry-run RestoreJob the driver started on
	// a Plan's drill schedule; the Plan records how it ended. A hint only:
	// the drill's keyed name is what says the driver made it.
	DrillLabel = "backups.cozystack.io/drill"
	// ScheduledAtAnnotation on a BackupJob or a drill's RestoreJob records
	// the run time (RFC 3339) the driver created it for.
	ScheduledAtAnnotation = "backups.cozystack.io/scheduled-at"
	// SnapshotHistoryLabel is set on an EtcdSnapshot when the driver hands
	// it to its Backup: it is then history, which the driver does not
	// cache (its caches select EtcdSnapshots without this label).
	SnapshotHistoryLabel = "etcd-backup-driver.cozystack.io/history"
	// RehearsalLabel marks a dry-run RestoreJob's rehearsal Job and its
	// Pods (in the tenant's namespace); its value is the RestoreJob's UID.
	// The tenant can copy it onto a Job of its own, so the driver finds
	// its Job by this label, its owner reference and its Pod template
	// together, never by the label alone.
	RehearsalLabel = "backups.cozystack.io/rehearsal"

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
	// BackupJobSnapshotFinalizer was put on an Etcd BackupJob by earlier
	// releases while its EtcdSnapshot ran; the driver now only removes it
	// (SnapshotRecordFinalizer, on the snapshot, took its place).
	BackupJobSnapshotFinalizer = "strategy.backups.cozystack.io/etcd-snapshot-in-flight"
	// SnapshotRecordFinalizer is on the EtcdSnapshot a BackupJob creates,
	// from its create until its Backup is recorded (removed in the same
	// write that hands the snapshot to the Backup), it fails, or, for a
	// job deleted meanwhile, the backup deadline passes: a job deleted
	// while its snapshot runs goes at once, and the snapshot it leaves is
	// still recorded as a Backup instead of orphaning its S3 object.
	SnapshotRecordFinalizer = "strategy.backups.cozystack.io/etcd-backup-record"
)

// Condition types written on BackupJobs and RestoreJobs.
const (
	// ConditionReady is True when the job succeeded and False while it waits
	// or after it failed; the reason tells which.
	ConditionReady = "Ready"
)
