package minio

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// ServiceAccount is a service account as the admin API lists it.
type ServiceAccount struct {
	// ParentUser is the user the account derives from.
	ParentUser string `json:"parentUser"`
	// AccountStatus is "on" or "off".
	AccountStatus string `json:"accountStatus"`
	// AccessKey is the account's access key id.
	AccessKey string `json:"accessKey"`
	// Name is the label given at creation (at most 32 characters).
	Name string `json:"name,omitempty"`
	// Description is free text given at creation (at most 256 bytes).
	Description string `json:"description,omitempty"`
	// Expiration is when the server stops accepting the account; nil or
	// the Unix epoch means never.
	Expiration *time.Time `json:"expiration,omitempty"`
	// ImpliedPolicy reports that the account has no policy of its own and
	// so has every right of its parent user.
	ImpliedPolicy bool `json:"impliedPolicy"`
}

// ServiceAccountInfo is one service account as the admin API describes it.
type ServiceAccountInfo struct {
	// ParentUser is the user the account derives from.
	ParentUser string `json:"parentUser"`
	// Name is the label given at creation.
	Name string `json:"name,omitempty"`
	// Description is free text given at creation.
	Description string `json:"description,omitempty"`
	// AccountStatus is "on" or "off".
	AccountStatus string `json:"accountStatus"`
	// ImpliedPolicy reports that the account has no policy of its own;
	// Policy is then its parent's.
	ImpliedPolicy bool `json:"impliedPolicy"`
	// Policy is the account's own policy, or its parent's when implied.
	Policy string `json:"policy"`
	// Expiration is when the server stops accepting the account.
	Expiration *time.Time `json:"expiration,omitempty"`
}

// NewServiceAccount is a request to create a service account.
type NewServiceAccount struct {
	// Policy is the inline policy; it limits the account to what it allows.
	Policy json.RawMessage `json:"policy,omitempty"`
	// Name labels the account (at most 32 characters, a letter first, then
	// letters, digits, '-' and '_').
	Name string `json:"name,omitempty"`
	// Description is free text (at most 256 bytes).
	Description string `json:"description,omitempty"`
	// TargetUser is the parent user; empty means the signing user.
	TargetUser string `json:"targetUser,omitempty"`
}

// Credentials is a key pair the server issued.
type Credentials struct {
	// AccessKey is the access key id.
	AccessKey string `json:"accessKey"`
	// SecretKey is the secret access key.
	SecretKey string `json:"secretKey"`
}

// AddServiceAccount creates a service account of the signing user,
// limited by req.Policy, and returns its key (PUT add-service-account).
func (a *Admin) AddServiceAccount(ctx context.Context, req NewServiceAccount) (Credentials, error) {
	var resp struct {
		Credentials Credentials `json:"credentials"`
	}
	err := a.call(ctx, http.MethodPut, "/add-service-account", nil, req, true, &resp)
	return resp.Credentials, err
}

// ErrNoPolicy is returned for an update without the account's policy:
// MinIO drops the own policy of an account updated without one, which
// leaves it every right of its parent.
var ErrNoPolicy = errors.New("refusing to update a MinIO service account without its policy: the server would drop it")

// ExpireServiceAccount sets when the server stops accepting accessKey and
// sends policy with it, so the server keeps it (POST
// update-service-account with newPolicy and newExpiration). It refuses
// to send the update without a policy.
func (a *Admin) ExpireServiceAccount(ctx context.Context, accessKey string, policy json.RawMessage, at time.Time) error {
	if !hasStatements(policy) {
		return ErrNoPolicy
	}
	at = at.UTC().Truncate(time.Second)
	body := struct {
		NewPolicy     json.RawMessage `json:"newPolicy"`
		NewExpiration *time.Time      `json:"newExpiration"`
	}{policy, &at}
	return a.call(ctx, http.MethodPost, "/update-service-account", url.Values{"accessKey": {accessKey}}, body, true, nil)
}

// hasStatements reports whether policy is a document with at least one
// statement: anything less is, to MinIO, no policy.
func hasStatements(policy json.RawMessage) bool {
	var d struct {
		Version   string            `json:"Version"`
		Statement []json.RawMessage `json:"Statement"`
	}
	return json.Unmarshal(policy, &d) == nil && d.Version != "" && len(d.Statement) > 0
}

// InfoServiceAccount describes accessKey (GET info-service-account).
func (a *Admin) InfoServiceAccount(ctx context.Context, accessKey string) (ServiceAccountInfo, error) {
	var info ServiceAccountInfo
	err := a.call(ctx, http.MethodGet, "/info-service-account", url.Values{"accessKey": {accessKey}}, nil, true, &info)
	return info, err
}

// DeleteServiceAccount removes accessKey (DELETE delete-service-account).
func (a *Admin) DeleteServiceAccount(ctx context.Context, accessKey string) error {
	return a.call(ctx, http.MethodDelete, "/delete-service-account", url.Values{"accessKey": {accessKey}}, nil, false, nil)
}

// ListServiceAccounts lists the service accounts of the signing user.
func (a *Admin) ListServiceAccounts(ctx context.Context) ([]ServiceAccount, error) {
	return a.ListServiceAccountsOf(ctx, a.accessKey)
}

// ListServiceAccountsOf lists the service accounts of user (GET
// list-service-accounts); listing another user's needs the admin action.
func (a *Admin) ListServiceAccountsOf(ctx context.Context, user string) ([]ServiceAccount, error) {
	var resp struct {
		Accounts []ServiceAccount `json:"accounts"`
	}
	err := a.call(ctx, http.MethodGet, "/list-service-accounts", url.Values{"user": {user}}, nil, true, &resp)
	return resp.Accounts, err
}

// ServerInfo checks that the endpoint is a MinIO server that accepts the
// credential for admin requests (GET info); it returns the server's mode.
func (a *Admin) ServerInfo(ctx context.Context) (string, error) {
	var resp struct {
		Mode string `json:"mode"`
	}
	err := a.call(ctx, http.MethodGet, "/info", nil, nil, false, &resp)
	return resp.Mode, err
}
