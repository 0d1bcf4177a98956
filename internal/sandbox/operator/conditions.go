package operator

// Reasons the stand-in writes, exactly the operator's (peer-contracts F.1,
// F.4); the ones the driver reads are also constants in api/etcdoperator.
const (
	reasonClusterDiscovered  = "ClusterDiscovered"
	reasonQuorumHealthy      = "QuorumHealthy"
	reasonQuorumAvailable    = "QuorumAvailable"
	reasonQuorumLost         = "QuorumLost"
	reasonClusterUnreachable = "ClusterUnreachable"
	reasonMembersUnhealthy   = "MembersUnhealthy"
	reasonBootstrapFailed    = "BootstrapFailed"
	reasonWaitingForSeed     = "WaitingForSeed"
	reasonSpecChanged        = "SpecChanged"
	reasonReconciled         = "Reconciled"

	reasonJobCreated      = "JobCreated"
	reasonJobRunning      = "JobRunning"
	reasonJobFailed       = "JobFailed"
	reasonSnapshotJobLost = "SnapshotJobLost"
	reasonClusterNotFound = "ClusterNotFound"
	reasonSnapshotStored  = "SnapshotStored"
)
