package v1alpha1

// StrategyPolicyConditionValid says whether the policy can be applied to
// its Etcd strategy (the strategy of the same name). False means Backups
// through the strategy fail (their BackupJob names this StrategyPolicy) and
// the credential broker issues and rotates no keys until it is fixed.
const StrategyPolicyConditionValid = "Valid"

// Reasons of the Valid condition (and of the Events written when it
// changes).
const (
	// StrategyPolicyReasonAccepted: the Etcd strategy of the policy's name
	// exists and the two go together.
	StrategyPolicyReasonAccepted = "Accepted"
	// StrategyPolicyReasonStrategyNotFound: no Etcd strategy has the
	// policy's name (yet); the policy applies to nothing.
	StrategyPolicyReasonStrategyNotFound = "StrategyNotFound"
	// StrategyPolicyReasonBrokerNeedsLiteralDestination: the policy sets a
	// credentialBroker and the strategy templates its bucket or endpoint.
	// One tenant key covers one bucket at one endpoint.
	StrategyPolicyReasonBrokerNeedsLiteralDestination = "BrokerNeedsLiteralDestination"
)
