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

// StrategyPolicyConditionMigrated says whether the settings an Etcd strategy
// holds in fields of the driver's earlier strategy CRD (spec.deletionPolicy,
// allowHTTPEndpoint, credentialBroker, inspection: served where that CRD is
// still installed, as Helm never upgrades a chart's crds/) are what this
// policy says. Set only for a strategy that held such fields. The old fields
// are read until the condition is True, then never again.
const StrategyPolicyConditionMigrated = "Migrated"

// Reasons of the Migrated condition (and of the Events, on the strategy,
// written when it changes).
const (
	// StrategyPolicyReasonSettingsMigrated: the driver created this policy
	// from the strategy's earlier fields.
	StrategyPolicyReasonSettingsMigrated = "SettingsMigrated"
	// StrategyPolicyReasonSettingsAgree: the policy existed and says what
	// the strategy's earlier fields said (or the strategy holds them no
	// more).
	StrategyPolicyReasonSettingsAgree = "SettingsAgree"
	// StrategyPolicyReasonMigrationConflict: the policy existed and says
	// something else than a field of the strategy; the driver changed
	// nothing and the policy applies. The message names both.
	StrategyPolicyReasonMigrationConflict = "MigrationConflict"
)

// MigratedFromAnnotation on a StrategyPolicy records the UID of the Etcd
// strategy whose earlier fields the driver has read (moved, or found in
// agreement): they are not read again.
const MigratedFromAnnotation = "etcd-backup-driver.cozystack.io/migrated-from"
