package v1alpha1

// Condition types the Etcd driver writes on RestoreJobs besides Ready. Each
// records one durable milestone of an in-place restore, so a person (and the
// driver after a restart) can see how far it got.
const (
	// RestoreConditionClaimed is True while the RestoreJob holds the
	// application's restore claim (a Lease), False once it released it.
	RestoreConditionClaimed = "Claimed"
	// RestoreConditionSafetyBackup is True when a safety Backup of the live
	// cluster was recorded before anything was destroyed, False when the
	// restore went ahead without one (the message says why).
	RestoreConditionSafetyBackup = "SafetyBackup"
	// RestoreConditionSpecCaptured is True once the live EtcdCluster (spec,
	// labels, annotations) is saved in a ConfigMap the message names.
	RestoreConditionSpecCaptured = "EtcdClusterSpecCaptured"
	// RestoreConditionPurged is True once the old EtcdCluster and its
	// volumes were observed gone; a cluster appearing after that which this
	// RestoreJob did not create is someone else's.
	RestoreConditionPurged = "TargetPurged"
	// RestoreConditionRecreated is True once the EtcdCluster carrying this
	// restore's bootstrap source exists.
	RestoreConditionRecreated = "EtcdClusterRecreated"
	// RestoreConditionHelmReleaseReconciled reports, after the restore,
	// whether the application's HelmRelease reconciled Ready again.
	RestoreConditionHelmReleaseReconciled = "HelmReleaseReconciled"
)

// RestoreReason is a typed condition and Event reason of the restore path.
// Every value matches the CRD's reason pattern.
type RestoreReason string

// Reasons while a restore waits or progresses (Ready=False, not terminal).
const (
	ReasonBackupNotFound           RestoreReason = "BackupNotFound"
	ReasonWaitingForClaim          RestoreReason = "WaitingForClaim"
	ReasonWaitingForSnapshots      RestoreReason = "WaitingForSnapshots"
	ReasonClaimAcquired            RestoreReason = "ClaimAcquired"
	ReasonClaimReleased            RestoreReason = "ClaimReleased"
	ReasonSafetySnapshotRunning    RestoreReason = "SafetySnapshotRunning"
	ReasonSafetyBackupRecorded     RestoreReason = "SafetyBackupRecorded"
	ReasonSafetySnapshotSkipped    RestoreReason = "SafetySnapshotSkipped"
	ReasonSpecCaptured             RestoreReason = "SpecCaptured"
	ReasonHelmReleaseSuspended     RestoreReason = "HelmReleaseSuspended"
	ReasonHelmReleaseNotFound      RestoreReason = "HelmReleaseNotFound"
	ReasonPurgingCluster           RestoreReason = "PurgingCluster"
	ReasonClusterPurged            RestoreReason = "ClusterPurged"
	ReasonClusterRecreated         RestoreReason = "ClusterRecreated"
	ReasonEtcdClusterBootstrapping RestoreReason = "EtcdClusterBootstrapping"
)

// Reasons of a finished restore.
const (
	ReasonRestoreCompleted RestoreReason = "RestoreCompleted"

	// Pre-flight refusals: nothing was changed.
	ReasonBackupNotReady        RestoreReason = "BackupNotReady"
	ReasonUnsupportedTarget     RestoreReason = "UnsupportedTarget"
	ReasonMalformedOptions      RestoreReason = "MalformedOptions"
	ReasonUnrecognisedArtifact  RestoreReason = "UnrecognisedArtifact"
	ReasonNoObjectKey           RestoreReason = "NoObjectKey"
	ReasonSourceClusterNotFound RestoreReason = "SourceClusterNotFound"
	ReasonSafetySnapshotFailed  RestoreReason = "SafetySnapshotFailed"
	ReasonClusterNotAvailable   RestoreReason = "ClusterNotAvailable"

	// Failures once the restore held the application.
	ReasonDeadlineExceeded  RestoreReason = "DeadlineExceeded"
	ReasonClusterReplaced   RestoreReason = "ClusterReplacedByOther"
	ReasonRecreateRejected  RestoreReason = "RecreateRejected"
	ReasonCaptureUnreadable RestoreReason = "CaptureUnreadable"
	ReasonClaimLost         RestoreReason = "ClaimLost"
	ReasonRestoreJobDeleted RestoreReason = "RestoreJobDeleted"
)

// Reasons of the HelmReleaseReconciled condition.
const (
	ReasonHelmReleaseReady         RestoreReason = "HelmReleaseReady"
	ReasonHelmReleaseNotReady      RestoreReason = "HelmReleaseNotReady"
	ReasonHelmReleaseReconciling   RestoreReason = "HelmReleaseReconciling"
	ReasonHelmReleaseLeftSuspended RestoreReason = "HelmReleaseLeftSuspended"
)

// Labels and annotations of the restore path.
const (
	// RestoreJobUIDLabel carries the UID of the RestoreJob that made an
	// object (safety snapshot, safety Backup, capture), so a re-created
	// RestoreJob of the same name never adopts it.
	RestoreJobUIDLabel = "backups.cozystack.io/restore-job-uid"
	// RestoreJobNameLabel names the RestoreJob that made an object.
	RestoreJobNameLabel = "backups.cozystack.io/restore-job"
	// RestoredByAnnotation is set on an EtcdCluster a RestoreJob re-created;
	// its value is that RestoreJob's UID.
	RestoredByAnnotation = "backups.cozystack.io/restored-by"
	// RestoredFromAnnotation names the Backup an EtcdCluster was restored from.
	RestoredFromAnnotation = "backups.cozystack.io/restored-from"
)
