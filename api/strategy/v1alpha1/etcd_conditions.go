package v1alpha1

// EtcdConditionSharedCredentials reports whether namespaces that back up
// with the strategy use the same S3 access key. True means at least two
// namespaces do: a tenant that can read its own credentials Secret holds a
// key that reaches the other tenants' snapshots. The driver compares keyed
// hashes of the access key ids it reads; no key, and no plain hash of one,
// is ever written to the condition.
const EtcdConditionSharedCredentials = "SharedCredentials"

// Reasons of the strategy's SharedCredentials condition (and of the Events
// written when it changes).
const (
	// EtcdReasonSharedAccessKey: namespaces share an access key; the
	// message says how many and names a few.
	EtcdReasonSharedAccessKey = "SharedAccessKey"
	// EtcdReasonCredentialsIsolated: every namespace the driver knows to
	// back up with the strategy has an access key of its own.
	EtcdReasonCredentialsIsolated = "CredentialsIsolated"
)
