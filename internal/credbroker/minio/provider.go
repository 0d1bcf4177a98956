package minio

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
)

// Provider issues tenant identities as MinIO service accounts of the admin
// credential's user, each with the tenant policy inline: MinIO limits a
// service account with an inline policy to what that policy allows, even
// when its parent is the root user.
type Provider struct {
	admin *Admin
}

var _ credbroker.Provider = (*Provider)(nil)

// New returns a provider for the MinIO server at endpoint administered with
// the given key.
func New(endpoint string, admin credbroker.Key, httpClient *http.Client) (*Provider, error) {
	a, err := NewAdmin(endpoint, admin.AccessKeyID, admin.SecretAccessKey, httpClient)
	if err != nil {
		return nil, err
	}
	return &Provider{admin: a}, nil
}

// The description records the issue time only, so that rotation can be
// decided from MinIO's listing alone. It names no namespace: MinIO lets
// every service account list its parent's service accounts (access key
// ids, names, descriptions; never secrets), so a tenant key sees its
// siblings' records. Names are opaque hashes for the same reason.
const descPrefix = "etcd-backup-driver tenant key: issued="

func describe(now time.Time) string {
	return descPrefix + strconv.FormatInt(now.Unix(), 10)
}

func parseDescription(d string) (issued time.Time, ok bool) {
	rest, found := strings.CutPrefix(d, descPrefix)
	if !found {
		return time.Time{}, false
	}
	unix, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || unix <= 0 {
		return time.Time{}, false
	}
	return time.Unix(unix, 0), true
}

// Issue creates a service account named owner.Name with the scope's policy.
func (p *Provider) Issue(ctx context.Context, owner credbroker.Owner, scope credbroker.Scope, now time.Time) (credbroker.Key, error) {
	creds, err := p.admin.AddServiceAccount(ctx, NewServiceAccount{
		Policy:      credbroker.Policy(scope),
		Name:        owner.Name,
		Description: describe(now),
	})
	if err != nil {
		return credbroker.Key{}, fmt.Errorf("create MinIO service account %s for namespace %s: %w", owner.Name, owner.Namespace, err)
	}
	return credbroker.Key{AccessKeyID: creds.AccessKey, SecretAccessKey: creds.SecretKey}, nil
}

// MinIO refuses an expiration sooner than 15 minutes ahead.
const minExpiry = 16 * time.Minute

// Expire sets the service account's expiration, at least minExpiry ahead.
func (p *Provider) Expire(ctx context.Context, accessKeyID string, at time.Time) error {
	if soonest := time.Now().Add(minExpiry); at.Before(soonest) {
		at = soonest
	}
	if err := p.admin.ExpireServiceAccount(ctx, accessKeyID, at); err != nil {
		return fmt.Errorf("expire MinIO service account %s: %w", accessKeyID, err)
	}
	return nil
}

// Delete removes the service account; one already gone is not an error.
func (p *Provider) Delete(ctx context.Context, accessKeyID string) error {
	if err := p.admin.DeleteServiceAccount(ctx, accessKeyID); err != nil && !IsNotFound(err) {
		return fmt.Errorf("delete MinIO service account %s: %w", accessKeyID, err)
	}
	return nil
}

// List returns the admin user's service accounts whose name starts with
// group.
func (p *Provider) List(ctx context.Context, group string) ([]credbroker.Identity, error) {
	accounts, err := p.admin.ListServiceAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list MinIO service accounts: %w", err)
	}
	var out []credbroker.Identity
	for _, a := range accounts {
		if group == "" || !strings.HasPrefix(a.Name, group) {
			continue
		}
		id := credbroker.Identity{AccessKeyID: a.AccessKey, Owner: credbroker.Owner{Name: a.Name, Group: group}}
		id.IssuedAt, _ = parseDescription(a.Description)
		if a.Expiration != nil && !a.Expiration.IsZero() && a.Expiration.Unix() > 0 {
			id.Expires = *a.Expiration
		}
		out = append(out, id)
	}
	return out, nil
}

// Connect is a credbroker.NewProvider for MinIO through httpClient (nil
// means http.DefaultClient).
func Connect(httpClient *http.Client) credbroker.NewProvider {
	return func(endpoint string, admin credbroker.Key) (credbroker.Provider, error) {
		return New(endpoint, admin, httpClient)
	}
}
