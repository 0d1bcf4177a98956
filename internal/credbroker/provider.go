// Package credbroker gives each tenant namespace that backs up with a
// brokered Etcd strategy its own S3 key, limited to the tenant's prefix,
// instead of a key pair an administrator copies into every namespace.
//
// The platform's admin credential stays in the driver's namespace. For each
// (strategy, tenant namespace) the broker asks a Provider (an S3 service's
// identity API: MinIO users and service accounts today) for a parent
// identity of the tenant's own, whose rights are list, get and put under the
// tenant's prefix and nothing else, and for a key under it with that same
// policy; it reads the key back and hands it out only when the provider
// holds exactly that policy, and writes it into a driver-owned Secret in the
// tenant namespace: the Secret the EtcdSnapshot and the restore source name.
// Keys rotate on the strategy's schedule; the previous key keeps working,
// still within its scope, for a grace period longer than any backup or
// restore, then is deleted. Owners whose namespace or strategy is gone are
// deleted with their keys.
package credbroker

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Key is an S3 key pair, as the operator reads it from a Secret.
type Key struct {
	// AccessKeyID is the access key id.
	AccessKeyID string
	// SecretAccessKey is the secret access key.
	SecretAccessKey string
}

// Scope is what one tenant's identity may reach: the objects of Bucket
// whose keys start with Prefix.
type Scope struct {
	// Bucket is the bucket name.
	Bucket string
	// Prefix is the tenant's key prefix; it ends with "/".
	Prefix string
}

// Owner names whom an identity belongs to. Providers record Name and Group
// (opaque hashes) with the identity, so that identities can be found and
// removed after the tenant namespace is gone; they do not record the
// namespace, because an S3 service may show one tenant's key the records
// of its siblings (MinIO does).
type Owner struct {
	// Name is unique per (strategy, namespace); at most 32 characters,
	// starting with Group.
	Name string
	// Group is shared by every identity of one strategy.
	Group string
	// Namespace is the tenant namespace; empty in what List returns.
	Namespace string
}

// Identity is an S3 key a provider holds for an owner.
type Identity struct {
	// AccessKeyID is the key's access key id.
	AccessKeyID string
	// Owner is whom it was issued for, as the provider recorded it.
	Owner Owner
	// Parent is the identity the key derives its rights from (on MinIO:
	// the user it is a service account of). The broker's keys have their
	// owner's own parent, never the platform credential.
	Parent string
	// IssuedAt is when it was issued.
	IssuedAt time.Time
	// Expires is when the provider stops accepting it; zero means never.
	Expires time.Time
	// Brokered reports whether the provider's record carries the broker's
	// mark: keys without it were made by someone else.
	Brokered bool
	// Inherits reports whether the key has no policy of its own and so
	// has every right of its parent.
	Inherits bool
	// Enabled reports whether the provider accepts the key.
	Enabled bool
	// Policy is the key's own policy; only Inspect fills it.
	Policy json.RawMessage
}

// Holding is one owner's parent identity and the keys under it.
type Holding struct {
	// Owner is whom the parent identity is for.
	Owner Owner
	// Keys are the keys the provider lists for the owner.
	Keys []Identity
}

// ErrNoSuchKey means the provider does not know an access key.
var ErrNoSuchKey = errors.New("the S3 service does not know this access key")

// Provider issues, retires and deletes keys on one S3 service with the
// platform's admin credential. Implementations: internal/credbroker/minio.
// Each owner (a tenant namespace of a strategy) has a parent identity of
// its own whose rights are the tenant's scope, so that no key under it can
// ever reach more, whatever happens to the key's own policy, and no
// tenant's key shares a parent with another tenant's. A Ceph RGW provider
// would map the parent to a user and keys to its subusers; an AWS IAM
// provider to an IAM user with an inline user policy and its access keys
// (see docs/security.md).
type Provider interface {
	// Issue makes sure owner's parent identity exists with scope's rights,
	// creates a new key under it whose own policy is scope's, and returns
	// it. The provider records owner and now with the key.
	Issue(ctx context.Context, owner Owner, scope Scope, now time.Time) (Key, error)
	// Inspect reads a key back as the provider holds it, its own policy
	// included; ErrNoSuchKey when the provider does not know it.
	Inspect(ctx context.Context, accessKeyID string) (Identity, error)
	// Expire makes the provider stop accepting accessKeyID at at. The
	// update carries policy, the key's own policy, which the provider
	// keeps: an empty policy is refused, never sent.
	Expire(ctx context.Context, accessKeyID string, policy json.RawMessage, at time.Time) error
	// Delete removes accessKeyID; a key already gone is not an error.
	Delete(ctx context.Context, accessKeyID string) error
	// List returns group's owners the provider holds, each with its keys;
	// keys of group found under the platform credential itself (the
	// layout before owners had parents of their own) are listed under
	// their owner with that Parent.
	List(ctx context.Context, group string) ([]Holding, error)
	// RemoveOwner deletes owner's parent identity with every key under it.
	RemoveOwner(ctx context.Context, owner string) error
	// PlatformKeys lists the keys whose parent is the platform credential
	// itself: the broker issues none.
	PlatformKeys(ctx context.Context) ([]Identity, error)
	// RootKeys lists the keys of the service's root user, when the
	// platform credential is not root.
	RootKeys(ctx context.Context) ([]Identity, error)
}
