package minio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
)

// Provider issues tenant keys as MinIO service accounts of a MinIO user of
// the tenant's own (named after the owner), whose one canned policy (of the
// same name) is the tenant's scope with every admin action denied. Each key
// also carries the scope as its own inline policy. MinIO judges a service
// account by its parent user's policy and, when it has one, its own: a key
// that loses its own policy (MinIO drops it on any update that does not
// carry one) still reaches its tenant's scope only. A tenant's key cannot
// see or delete another tenant's keys: MinIO lets a key list and delete
// the keys of its own parent only. The platform credential needs the admin
// actions listed in docs/security.md, not root.
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
// decided from MinIO's listing alone; it is also the broker's mark. It
// names no namespace: MinIO lets every service account list its parent's
// service accounts (access key ids, names, descriptions; never secrets).
// A tenant's key now sees only its own tenant's keys there, and names
// stay opaque hashes all the same.
const descPrefix = "etcd-backup-driver tenant key: issued="

func describe(now time.Time) string {
	return descPrefix + strconv.FormatInt(now.Unix(), 10)
}

// parseDescription reads the issue time back; ok reports whether d is the
// broker's mark.
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

// Issue makes sure owner's user and its policy exist and carry scope, and
// creates a service account of that user with scope's policy inline.
func (p *Provider) Issue(ctx context.Context, owner credbroker.Owner, scope credbroker.Scope, now time.Time) (credbroker.Key, error) {
	if err := p.ensureParent(ctx, owner.Name, scope); err != nil {
		return credbroker.Key{}, fmt.Errorf("prepare MinIO user %s for namespace %s: %w", owner.Name, owner.Namespace, err)
	}
	creds, err := p.admin.AddServiceAccount(ctx, NewServiceAccount{
		Policy:      credbroker.Policy(scope),
		Name:        owner.Name,
		Description: describe(now),
		TargetUser:  owner.Name,
	})
	if err != nil {
		return credbroker.Key{}, fmt.Errorf("create MinIO service account of %s for namespace %s: %w", owner.Name, owner.Namespace, err)
	}
	return credbroker.Key{AccessKeyID: creds.AccessKey, SecretAccessKey: creds.SecretKey}, nil
}

// ensureParent writes the owner's canned policy (always: a scope that
// changed is written over the old one), creates the user when it is
// missing, and attaches the policy to it as its only one.
func (p *Provider) ensureParent(ctx context.Context, user string, scope credbroker.Scope) error {
	if err := p.admin.AddPolicy(ctx, user, credbroker.ParentPolicy(scope)); err != nil {
		return fmt.Errorf("write its policy: %w", err)
	}
	exists, err := p.admin.UserExists(ctx, user)
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	if !exists {
		// A secret nobody keeps: the user exists to be the parent of
		// service accounts, never to sign requests.
		secret, err := RandomSecret()
		if err != nil {
			return err
		}
		if err := p.admin.AddUser(ctx, user, secret); err != nil {
			return fmt.Errorf("create it: %w", err)
		}
	}
	if err := p.admin.SetUserPolicy(ctx, user, user); err != nil {
		return fmt.Errorf("attach its policy: %w", err)
	}
	return nil
}

// Inspect reads a service account back with its own policy.
func (p *Provider) Inspect(ctx context.Context, accessKeyID string) (credbroker.Identity, error) {
	info, err := p.admin.InfoServiceAccount(ctx, accessKeyID)
	if IsNotFound(err) {
		return credbroker.Identity{}, fmt.Errorf("MinIO service account %s: %w", accessKeyID, credbroker.ErrNoSuchKey)
	}
	if err != nil {
		return credbroker.Identity{}, fmt.Errorf("read MinIO service account %s: %w", accessKeyID, err)
	}
	id := identity(ServiceAccount{ParentUser: info.ParentUser, AccountStatus: info.AccountStatus, AccessKey: accessKeyID,
		Name: info.Name, Description: info.Description, Expiration: info.Expiration, ImpliedPolicy: info.ImpliedPolicy}, "")
	if !info.ImpliedPolicy {
		id.Policy = json.RawMessage(info.Policy)
	}
	return id, nil
}

// identity maps a listed service account to the broker's terms.
func identity(a ServiceAccount, group string) credbroker.Identity {
	id := credbroker.Identity{
		AccessKeyID: a.AccessKey,
		Owner:       credbroker.Owner{Name: a.Name, Group: group},
		Parent:      a.ParentUser,
		Inherits:    a.ImpliedPolicy,
		Enabled:     a.AccountStatus != "off",
	}
	id.IssuedAt, id.Brokered = parseDescription(a.Description)
	if a.Expiration != nil && !a.Expiration.IsZero() && a.Expiration.Unix() > 0 {
		id.Expires = *a.Expiration
	}
	return id
}

// MinIO refuses an expiration sooner than 15 minutes ahead.
const minExpiry = 16 * time.Minute

// Expire sets the service account's expiration, at least minExpiry ahead,
// and its own policy with it.
func (p *Provider) Expire(ctx context.Context, accessKeyID string, policy json.RawMessage, at time.Time) error {
	if soonest := time.Now().Add(minExpiry); at.Before(soonest) {
		at = soonest
	}
	if err := p.admin.ExpireServiceAccount(ctx, accessKeyID, policy, at); err != nil {
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

// List returns group's users with their service accounts, and the admin
// user's own service accounts named in group (issued before owners had
// users of their own) under the owner they name.
func (p *Provider) List(ctx context.Context, group string) ([]credbroker.Holding, error) {
	users, err := p.admin.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list MinIO users: %w", err)
	}
	byOwner := map[string]*credbroker.Holding{}
	holding := func(name string) *credbroker.Holding {
		if h := byOwner[name]; h != nil {
			return h
		}
		h := &credbroker.Holding{Owner: credbroker.Owner{Name: name, Group: group}}
		byOwner[name] = h
		return h
	}
	for user := range users {
		if !strings.HasPrefix(user, group) {
			continue
		}
		h := holding(user)
		accounts, err := p.admin.ListServiceAccountsOf(ctx, user)
		if err != nil {
			return nil, fmt.Errorf("list the MinIO service accounts of %s: %w", user, err)
		}
		for _, a := range accounts {
			h.Keys = append(h.Keys, identity(a, group))
		}
	}
	own, err := p.admin.ListServiceAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the MinIO service accounts of %s: %w", p.admin.AccessKey(), err)
	}
	for _, a := range own {
		if strings.HasPrefix(a.Name, group) {
			h := holding(a.Name)
			h.Keys = append(h.Keys, identity(a, group))
		}
	}
	out := make([]credbroker.Holding, 0, len(byOwner))
	for _, h := range byOwner {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b credbroker.Holding) int { return strings.Compare(a.Owner.Name, b.Owner.Name) })
	return out, nil
}

// RemoveOwner deletes the owner's user (MinIO deletes its service accounts
// with it) and its canned policy.
func (p *Provider) RemoveOwner(ctx context.Context, owner string) error {
	if err := p.admin.RemoveUser(ctx, owner); err != nil {
		return fmt.Errorf("delete MinIO user %s: %w", owner, err)
	}
	if err := p.admin.RemovePolicy(ctx, owner); err != nil {
		return fmt.Errorf("delete MinIO policy %s: %w", owner, err)
	}
	return nil
}

// RootKeys lists the service accounts of the server's root user (when
// the admin credential is not root itself): the user that has service
// accounts and is not a regular user.
func (p *Provider) RootKeys(ctx context.Context) ([]credbroker.Identity, error) {
	owners, err := p.admin.UsersWithServiceAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list MinIO users with service accounts: %w", err)
	}
	regular, err := p.admin.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list MinIO users: %w", err)
	}
	var out []credbroker.Identity
	for _, user := range owners {
		if _, ok := regular[user]; ok || user == p.admin.AccessKey() {
			continue
		}
		accounts, err := p.admin.ListServiceAccountsOf(ctx, user)
		if err != nil {
			return nil, fmt.Errorf("list the MinIO service accounts of %s: %w", user, err)
		}
		for _, a := range accounts {
			out = append(out, identity(a, ""))
		}
	}
	return out, nil
}

// PlatformKeys lists the admin user's own service accounts.
func (p *Provider) PlatformKeys(ctx context.Context) ([]credbroker.Identity, error) {
	own, err := p.admin.ListServiceAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the MinIO service accounts of %s: %w", p.admin.AccessKey(), err)
	}
	out := make([]credbroker.Identity, 0, len(own))
	for _, a := range own {
		out = append(out, identity(a, ""))
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
