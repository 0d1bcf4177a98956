package operator

// Reasons the stand-in writes, exactly the operator's (peer-contracts F.1,
// F.4); the ones the driver reads are also constants in api/etcdoperator.
const (
	reasonInitialSnapshot    = "InitialSnapshot"
	reasonSpecChanged        = "SpecChanged"
	reasonRetryAfterDeadline = "RetryAfterDeadline"
	reasonWaitingForSeed     = "WaitingForSeed"
	reasonClusterUnreachable = "ClusterUnreachable"
	reasonMembersUnhealthy   = "MembersUnhealthy"
	reasonQuorumLost         = "QuorumLost"
	reasonReconciled         = "Reconciled"
	reasonPaused             = "Paused"

	reasonJobCreated      = "JobCreated"
	reasonJobFailed       = "JobFailed"
	reasonSnapshotJobLost = "SnapshotJobLost"
	reasonClusterNotFound = "ClusterNotFound"
	reasonSnapshotStored  = "SnapshotStored"
)
