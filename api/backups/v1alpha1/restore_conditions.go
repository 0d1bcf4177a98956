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
	// RestoreConditionArtifactVerified is True once the Backup's S3 object
	// was checked (existence, size, and with verify: Full its sha256 and
	// etcd's integrity trailer) with the recorded credentials, before
	// anything was destroyed; False (terminal) when the check refused it.
	RestoreConditionArtifactVerified = "ArtifactVerified"
	// RestoreConditionRollback is True while (and after) a failed restore
	// re-creates the cluster from the safety Backup; its message says why
	// the restore failed.
	RestoreConditionRollback = "RolledBack"
	// RestoreConditionOutcome records the decided result (True: success,
	// False: failure) while the driver hands the application back; the
	// terminal phase is written only once the HelmRelease is back in its
	// prior state and the claim is released.
	RestoreConditionOutcome = "Outcome"
	// RestoreConditionControlPlanesFenced is True while the Kamaji tenant
	// control planes storing in the etcd are read-only for the restore
	// (the message names them); False with NoControlPlanes when there are
	// none, FenceDisabled when the job declined it, FenceLifted once the
	// fence is gone again.
	RestoreConditionControlPlanesFenced = "ControlPlanesFenced"
	// RestoreConditionControlPlanesRestarted reports whether the fenced
	// control planes' kube-apiservers were restarted on the restored etcd.
	RestoreConditionControlPlanesRestarted = "ControlPlanesRestarted"
	// RestoreConditionRevisionRaised is True once the snapshot was staged
	// with its revision above the live cluster's and everything below it
	// compacted, so every Kubernetes watch from before the restore is told
	// to relist; the message gives the revisions.
	RestoreConditionRevisionRaised = "RevisionRaised"
	// RestoreConditionDryRunChangeIgnored is True while spec.options.dryRun
	// asks for a dry run of a RestoreJob that started as a restore: a
	// RestoreJob does what it was asked when it started (Cozystack's CRD
	// lets its spec change), so the restore goes on.
	RestoreConditionDryRunChangeIgnored = "DryRunChangeIgnored"
)

// RestoreReason is a typed condition and Event reason of the restore path.
// Every value matches the CRD's reason pattern.
type RestoreReason string

// Reasons while a restore waits or progresses (Ready=False, not terminal).
const (
	ReasonBackupNotFound            RestoreReason = "BackupNotFound"
	ReasonWaitingForClaim           RestoreReason = "WaitingForClaim"
	ReasonWaitingForSnapshots       RestoreReason = "WaitingForSnapshots"
	ReasonClaimAcquired             RestoreReason = "ClaimAcquired"
	ReasonClaimReleased             RestoreReason = "ClaimReleased"
	ReasonSafetySnapshotRunning     RestoreReason = "SafetySnapshotRunning"
	ReasonSafetyBackupRecorded      RestoreReason = "SafetyBackupRecorded"
	ReasonSafetySnapshotSkipped     RestoreReason = "SafetySnapshotSkipped"
	ReasonSpecCaptured              RestoreReason = "SpecCaptured"
	ReasonHelmReleaseSuspended      RestoreReason = "HelmReleaseSuspended"
	ReasonHelmReleaseNotFound       RestoreReason = "HelmReleaseNotFound"
	ReasonPurgingCluster            RestoreReason = "PurgingCluster"
	ReasonClusterPurged             RestoreReason = "ClusterPurged"
	ReasonClusterRecreated          RestoreReason = "ClusterRecreated"
	ReasonEtcdClusterBootstrapping  RestoreReason = "EtcdClusterBootstrapping"
	ReasonVerifyingArtifact         RestoreReason = "VerifyingArtifact"
	ReasonArtifactVerified          RestoreReason = "ArtifactVerified"
	ReasonRollingBack               RestoreReason = "RollingBack"
	ReasonHandingBack               RestoreReason = "HandingBack"
	ReasonClaimBroken               RestoreReason = "StaleClaimBroken"
	ReasonFencingControlPlanes      RestoreReason = "FencingControlPlanes"
	ReasonControlPlanesFenced       RestoreReason = "ControlPlanesFenced"
	ReasonNoControlPlanes           RestoreReason = "NoControlPlanes"
	ReasonFenceDisabled             RestoreReason = "FenceDisabled"
	ReasonFenceLifted               RestoreReason = "FenceLifted"
	ReasonRestartingControlPlanes   RestoreReason = "RestartingControlPlanes"
	ReasonControlPlanesRestarted    RestoreReason = "ControlPlanesRestarted"
	ReasonControlPlanesNotRestarted RestoreReason = "ControlPlanesNotRestarted"
	ReasonStaging                   RestoreReason = "StagingSnapshot"
	ReasonRevisionRaised            RestoreReason = "RevisionRaised"
	ReasonRevisionBumpedBlind       RestoreReason = "RevisionBumpedWithoutLiveRevision"
	ReasonRevisionNotRaised         RestoreReason = "RevisionNotRaised"
	// ReasonReplacingRecreatedCluster: after the purge an EtcdCluster the
	// HelmRelease owns appeared without this restore's source (Flux
	// resumed by hand, the chart re-rendered); the restore deletes it and
	// re-creates its own.
	ReasonReplacingRecreatedCluster RestoreReason = "ReplacingRecreatedCluster"
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
	// ReasonClusterNotAvailable: no safety snapshot can be taken of a
	// cluster that is not Available, and none was declined explicitly.
	ReasonClusterNotAvailable RestoreReason = "ClusterNotAvailable"
	// ReasonUnverifiedBackup: the Backup is not one this driver signed, and
	// its location is not where this namespace's strategy writes.
	ReasonUnverifiedBackup RestoreReason = "UnverifiedBackup"
	// ReasonApplicationMismatch: the Backup's application is not the
	// application that owns the target cluster.
	ReasonApplicationMismatch RestoreReason = "ApplicationMismatch"
	// ReasonEndpointRefused: the endpoint breaks the endpoint policy.
	ReasonEndpointRefused RestoreReason = "EndpointRefused"
	// ReasonCredentialsUnavailable: the credentials Secret is missing or
	// lacks AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
	ReasonCredentialsUnavailable RestoreReason = "CredentialsUnavailable"
	// ReasonArtifactMissing: the S3 object does not exist (or S3 refused
	// the recorded credentials).
	ReasonArtifactMissing RestoreReason = "ArtifactMissing"
	// ReasonArtifactSizeMismatch: the object's size is not the recorded one.
	ReasonArtifactSizeMismatch RestoreReason = "ArtifactSizeMismatch"
	// ReasonArtifactChecksumMismatch: the object's sha256 is not the
	// recorded checksum.
	ReasonArtifactChecksumMismatch RestoreReason = "ArtifactChecksumMismatch"
	// ReasonArtifactCorrupt: the object is not an intact etcd snapshot (its
	// integrity trailer does not match its content).
	ReasonArtifactCorrupt RestoreReason = "ArtifactCorrupt"
	// ReasonInsufficientStorage: the member volume cannot hold the restore
	// (the restore agent needs twice the snapshot's size).
	ReasonInsufficientStorage RestoreReason = "InsufficientStorage"
	// ReasonEtcdVersionTooOld: the snapshot was taken from a newer etcd
	// than the target cluster runs.
	ReasonEtcdVersionTooOld RestoreReason = "EtcdVersionTooOld"
	// ReasonClusterPaused: the target has replicas: 0, so the operator
	// would never bootstrap it.
	ReasonClusterPaused RestoreReason = "ClusterPaused"
	// ReasonMemoryStorage: the target keeps its data in memory, which the
	// operator cannot restore into.
	ReasonMemoryStorage RestoreReason = "MemoryStorage"

	// ReasonNoStagingImage: raising the revision needs the staging Job's
	// image (--staging-image) and the driver has none.
	ReasonNoStagingImage RestoreReason = "NoStagingImage"
	// ReasonStagingRefused: the staging Job found the object changed or
	// corrupt since it was verified; nothing was destroyed.
	ReasonStagingRefused RestoreReason = "StagingRefused"
	// ReasonStagingFailed: the staging Job gave up (retries exhausted,
	// deadline); nothing was destroyed.
	ReasonStagingFailed RestoreReason = "StagingFailed"
	// ReasonPointBaseChosen: a restore to a point chose its base Backup
	// and pinned it on the RestoreJob.
	ReasonPointBaseChosen RestoreReason = "PointBaseChosen"
	// ReasonNoBaseAtPoint: no good Backup of the application, recorded and
	// inspected by this driver, is at or before the point; nothing was
	// changed.
	ReasonNoBaseAtPoint RestoreReason = "NoBaseAtPoint"
	// ReasonPointBaseLost: the base a restore to a point pinned cannot be
	// used any more (its record gone or forged, the point changed, the
	// Backup deleted); nothing was destroyed.
	ReasonPointBaseLost RestoreReason = "PointBaseLost"
	// ReasonStagingConflict: an object at the staging Job's name is not
	// this restore's.
	ReasonStagingConflict RestoreReason = "StagingConflict"
	// ReasonLiveRevisionOvertaken: read again just before the purge, the
	// live cluster had moved so far past the revision the snapshot was
	// staged above that the restored revision could fall below one its
	// clients saw; nothing was destroyed.
	ReasonLiveRevisionOvertaken RestoreReason = "LiveRevisionOvertaken"
	// ReasonLiveRevisionUnconfirmed: the live revision, read when the
	// snapshot was staged, could not be read again before the purge;
	// nothing was destroyed.
	ReasonLiveRevisionUnconfirmed RestoreReason = "LiveRevisionUnconfirmed"

	// Failures once the restore held the application.
	ReasonDeadlineExceeded  RestoreReason = "DeadlineExceeded"
	ReasonClusterReplaced   RestoreReason = "ClusterReplacedByOther"
	ReasonRecreateRejected  RestoreReason = "RecreateRejected"
	ReasonCaptureUnreadable RestoreReason = "CaptureUnreadable"
	ReasonClaimLost         RestoreReason = "ClaimLost"
	ReasonRestoreJobDeleted RestoreReason = "RestoreJobDeleted"
	// ReasonBootstrapFailed: the operator gave up bootstrapping the
	// re-created cluster.
	ReasonBootstrapFailed RestoreReason = "BootstrapFailed"
	// ReasonRolledBack: the restore failed after the purge and the cluster
	// was re-created from the safety Backup; the message says why.
	ReasonRolledBack RestoreReason = "RolledBack"
	// ReasonRollbackFailed: the restore failed after the purge and so did
	// the re-creation from the safety Backup.
	ReasonRollbackFailed RestoreReason = "RollbackFailed"
)

// Reasons of the HelmReleaseReconciled condition.
const (
	ReasonHelmReleaseReady         RestoreReason = "HelmReleaseReady"
	ReasonHelmReleaseNotReady      RestoreReason = "HelmReleaseNotReady"
	ReasonHelmReleaseReconciling   RestoreReason = "HelmReleaseReconciling"
	ReasonHelmReleaseLeftSuspended RestoreReason = "HelmReleaseLeftSuspended"
	// ReasonHelmReleaseKeptSuspended: the restore suspended the HelmRelease
	// and ended after the purge without a healthy cluster, so it keeps it
	// suspended: resuming would let Flux re-create an empty cluster over the
	// tenant's state, or hide the failure.
	ReasonHelmReleaseKeptSuspended RestoreReason = "HelmReleaseKeptSuspended"
)

// Labels, annotations and the finalizer of the restore path.
const (
	// RestoreFinalizer holds an Etcd RestoreJob until the driver has handed
	// the application back (HelmRelease prior state, claim released). It is
	// the driver's own, not the core's shared CleanupFinalizer, so a core
	// controller that strips that one on deletion cannot cut a restore's
	// cleanup short, and the driver never mistakes another driver's
	// RestoreJob for its own.
	RestoreFinalizer = "strategy.backups.cozystack.io/etcd-restore"

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
	// RestoreSucceededAnnotation is set on an EtcdCluster a RestoreJob
	// re-created once that RestoreJob found it healthy (every member
	// ready), with the progress deadline put back; its value is that
	// RestoreJob's UID. The restore's success is then a fact of the world,
	// and its status is written once, at the end.
	RestoreSucceededAnnotation = "backups.cozystack.io/restore-succeeded"
	// CaptureForLabel marks capture ConfigMaps (in the driver's namespace)
	// with the namespace of the RestoreJob they belong to.
	CaptureForLabel = "backups.cozystack.io/restore-namespace"

	// StagingLabel marks the staging Job of a restore, its Pods and its
	// PersistentVolumeClaim (in the tenant's namespace); its value is the
	// RestoreJob's UID.
	StagingLabel = "etcd-backup-driver.cozystack.io/staging-for"
	// FencedByAnnotation is set on a TenantControlPlane a restore made
	// read-only; its value is the RestoreJob's UID. It is written in the
	// same patch as the fence, so a fence is never without its record.
	FencedByAnnotation = "etcd-backup-driver.cozystack.io/fenced-by"
	// PriorWritePermissionsAnnotation keeps, in the same patch, the
	// TenantControlPlane's spec.writePermissions from before the fence
	// (JSON), which lifting the fence puts back.
	PriorWritePermissionsAnnotation = "etcd-backup-driver.cozystack.io/prior-write-permissions"
	// RestartedPodsAnnotation records (JSON: {at, pods}) when a restore
	// began restarting a control plane's kube-apiservers and the UIDs of
	// the Pods it deleted; the restart is done when none of them is left
	// and a new Pod is Ready.
	RestartedPodsAnnotation = "etcd-backup-driver.cozystack.io/restarted-pods"
)

// Reasons a dry-run RestoreJob ends with (Ready condition).
const (
	// ReasonRehearsed: the staged snapshot booted and read back; the
	// report says what a restore would change.
	ReasonRehearsed RestoreReason = "Rehearsed"
	// ReasonRehearsalFailed: the rehearsal Job refused the Backup's bytes,
	// could not boot them, or gave up; the message carries its reason.
	ReasonRehearsalFailed RestoreReason = "RehearsalFailed"
	// ReasonRehearsalUnrecorded: a dry run started, but the record of its
	// start (the annotation etcd-backup-driver.cozystack.io/rehearsal)
	// could not be written, or is gone or not the driver's when read
	// back; the live cluster is not counted twice.
	ReasonRehearsalUnrecorded RestoreReason = "RehearsalUnrecorded"
	// ReasonRehearsing: the rehearsal Job runs (not terminal).
	ReasonRehearsing RestoreReason = "Rehearsing"
	// ReasonRehearsalQueued: the dry run waits for a rehearsal slot
	// (--max-rehearsal-jobs across the cluster,
	// --max-rehearsal-jobs-per-namespace in its namespace); nothing has
	// started, and the message says which bound holds it (not terminal).
	ReasonRehearsalQueued RestoreReason = "RehearsalQueued"
)

// ReasonDryRunChangeIgnored (condition and Warning Event): spec.options.
// dryRun changed after the RestoreJob started, and is ignored: a restore
// goes on as a restore, a dry run as a dry run.
const ReasonDryRunChangeIgnored RestoreReason = "DryRunChangeIgnored"
