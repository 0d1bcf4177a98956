package credbroker

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// Names, labels and defaults of brokered credentials.
const (
	// SecretPrefix starts the name of every driver-owned tenant Secret:
	// SecretPrefix + the strategy name (or its hash when that is too long).
	SecretPrefix = "etcd-backup-broker-"
	// StrategyLabel on a tenant Secret is the hash of the strategy that
	// brokered it (Group without its "ebd-" prefix and trailing "-").
	StrategyLabel = "etcd-backup-driver.cozystack.io/credential-broker"
	// IssuedAnnotation is when the Secret's key was issued (RFC 3339).
	IssuedAnnotation = "etcd-backup-driver.cozystack.io/key-issued-at"
	// ScopeAnnotation is the bucket and prefix the Secret's key reaches.
	ScopeAnnotation = "etcd-backup-driver.cozystack.io/key-scope"
	// DefaultRotationInterval is how often a tenant key is replaced when
	// the strategy does not say.
	DefaultRotationInterval = 30 * 24 * time.Hour
	// YoungKeyGrace is how long after its issue a key is left alone by
	// the sweep even when no Secret holds it yet: the Secret is written
	// right after the key is issued, and a sweep that lists the key in
	// between must not retire it.
	YoungKeyGrace = 5 * time.Minute
)

// Brokered reports whether strategy issues tenant keys: it exists and its
// StrategyPolicy sets credentialBroker.
func Brokered(strategy strategypolicy.Strategy) bool {
	return strategy.Etcd != nil && strategy.Policy.Brokered()
}

func hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// SecretName is the driver-owned Secret that holds a tenant's key of
// strategy in every tenant namespace.
func SecretName(strategy string) string {
	if name := SecretPrefix + strategy; len(name) <= 253 {
		return name
	}
	return SecretPrefix + hash(strategy, 16)
}

// strategyHash identifies a strategy in provider names and labels.
func strategyHash(strategy string) string { return hash("strategy/"+strategy, 8) }

// Group is the provider group of strategy's identities.
func Group(strategy string) string { return "ebd-" + strategyHash(strategy) + "-" }

// OwnerOf is the owner of strategy's identity in namespace: 32 characters,
// MinIO's most for a service account name, of which 76 bits hash the
// namespace: two namespaces a tenant names would share a parent only by a
// collision no one can search for.
func OwnerOf(strategy, namespace string) Owner {
	return Owner{Name: Group(strategy) + hash("namespace/"+namespace, 19), Group: Group(strategy), Namespace: namespace}
}

// ScopeOf is what strategy's key in namespace reaches.
func ScopeOf(strategy strategypolicy.Strategy, namespace string) Scope {
	return placementOf(strategy).scope(namespace)
}

// Within reports whether an object key lies in the scope.
func (s Scope) Within(bucket, key string) bool {
	return bucket == s.Bucket && strings.HasPrefix(key, s.Prefix)
}

func (s Scope) String() string { return s.Bucket + "/" + s.Prefix }

// rotationInterval is the strategy's, or the default.
func rotationInterval(strategy strategypolicy.Strategy) time.Duration {
	if d := strategy.Policy.CredentialBroker.RotationInterval; d != nil && d.Duration >= time.Hour {
		return d.Duration
	}
	return DefaultRotationInterval
}

// adminEndpoint is where the provider's admin API is.
func adminEndpoint(strategy strategypolicy.Strategy) string {
	if e := strategy.Policy.CredentialBroker.AdminEndpoint; e != "" {
		return e
	}
	if d := strategy.Spec.Template.Destination.S3; d != nil {
		return d.Endpoint
	}
	return ""
}
