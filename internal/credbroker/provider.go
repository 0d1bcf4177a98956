// Package credbroker gives each tenant namespace that backs up with a
// brokered Etcd strategy its own S3 key, limited to the tenant's prefix,
// instead of a key pair an administrator copies into every namespace.
//
// The platform's admin credential stays in the driver's namespace. For each
// (strategy, tenant namespace) the broker asks a Provider (an S3 service's
// identity API: MinIO service accounts today) for an identity whose policy
// allows list, get and put under the tenant's prefix and nothing else, and
// writes its key into a driver-owned Secret in the tenant namespace: the
// Secret the EtcdSnapshot and the restore source name. Keys rotate on the
// strategy's schedule; the previous key keeps working for a grace period
// longer than any backup or restore, then is deleted. Identities whose
// namespace or strategy is gone are deleted.
package credbroker

import (
	"context"
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

// Identity is an S3 identity a provider holds for an owner.
type Identity struct {
	// AccessKeyID is the identity's access key id.
	AccessKeyID string
	// Owner is whom it was issued for, as the provider recorded it.
	Owner Owner
	// IssuedAt is when it was issued.
	IssuedAt time.Time
	// Expires is when the provider stops accepting it; zero means never.
	Expires time.Time
}

// Provider issues, retires and deletes identities on one S3 service with
// the platform's admin credential. Implementations: internal/credbroker/minio.
// A Ceph RGW provider would map an identity to a subuser (or user) with a
// bucket policy statement; an AWS IAM provider to an IAM user with an inline
// user policy and an access key (see docs/security.md).
type Provider interface {
	// Issue creates a new identity for owner limited to scope and returns
	// its key. The provider records owner and now with it.
	Issue(ctx context.Context, owner Owner, scope Scope, now time.Time) (Key, error)
	// Expire makes the provider stop accepting accessKeyID at at.
	Expire(ctx context.Context, accessKeyID string, at time.Time) error
	// Delete removes accessKeyID; an identity already gone is not an error.
	Delete(ctx context.Context, accessKeyID string) error
	// List returns the identities of group.
	List(ctx context.Context, group string) ([]Identity, error)
}
