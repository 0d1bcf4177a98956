package v1alpha1

// Reasons of a BackupJob's Ready condition. While the job waits, Ready is
// False with one of the waiting reasons and the phase is Pending or Running;
// each wait ends at the driver's backup deadline. A terminal failure sets
// the phase to Failed with one of the failure reasons; success sets Ready
// True with BackupCompleted.
const (
	// Waiting reasons.

	// BackupReasonBackupClassNotFound: the named BackupClass does not exist yet.
	BackupReasonBackupClassNotFound = "BackupClassNotFound"
	// BackupReasonStrategyNotReady: the strategy the class names does not exist yet.
	BackupReasonStrategyNotReady = "StrategyNotReady"
	// BackupReasonApplicationNotFound: the application does not exist yet.
	BackupReasonApplicationNotFound = "ApplicationNotFound"
	// BackupReasonEtcdClusterNotAvailable: the application's EtcdCluster is
	// missing or not Available.
	BackupReasonEtcdClusterNotAvailable = "EtcdClusterNotAvailable"
	// BackupReasonRestoreInProgress: a RestoreJob holds the application.
	BackupReasonRestoreInProgress = "RestoreInProgress"
	// BackupReasonWaitingForSnapshotSlot: as many snapshots of the cluster
	// as the driver lets run at once are running (another BackupJob's, a
	// restore's safety snapshot).
	BackupReasonWaitingForSnapshotSlot = "WaitingForSnapshotSlot"
	// BackupReasonEtcdBackupRunning: the EtcdSnapshot exists and has not finished.
	BackupReasonEtcdBackupRunning = "EtcdBackupRunning"

	// Terminal reasons.

	// BackupReasonBackupCompleted: the Backup is recorded (Ready=True).
	BackupReasonBackupCompleted = "BackupCompleted"
	// BackupReasonNoMatchingStrategy: the class binds no strategy for the
	// application's kind.
	BackupReasonNoMatchingStrategy = "NoMatchingStrategy"
	// BackupReasonInvalidApplicationRef: the application is not an Etcd app.
	BackupReasonInvalidApplicationRef = "InvalidApplicationRef"
	// BackupReasonTemplateError: the strategy template did not render.
	BackupReasonTemplateError = "TemplateError"
	// BackupReasonInvalidDestination: the rendered destination is invalid.
	BackupReasonInvalidDestination = "InvalidDestination"
	// BackupReasonInvalidStrategyPolicy: the strategy's StrategyPolicy
	// (etcd-backup-driver.cozystack.io) does not go with the strategy;
	// the message names it and what to change.
	BackupReasonInvalidStrategyPolicy = "InvalidStrategyPolicy"
	// BackupReasonDeadlineExceeded: a wait outlasted the backup deadline.
	BackupReasonDeadlineExceeded = "DeadlineExceeded"
	// BackupReasonSnapshotFailed: the etcd-operator reported the snapshot Failed.
	BackupReasonSnapshotFailed = "SnapshotFailed"
	// BackupReasonSnapshotConflict: an EtcdSnapshot with this job's
	// deterministic name belongs to something else.
	BackupReasonSnapshotConflict = "SnapshotConflict"
	// BackupReasonBackupConflict: a Backup named after this job belongs to
	// something else.
	BackupReasonBackupConflict = "BackupConflict"
)
