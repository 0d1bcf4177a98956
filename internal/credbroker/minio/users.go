package minio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
)

// UserInfo is a user as the admin API lists it.
type UserInfo struct {
	// PolicyName is the comma-separated list of policies attached.
	PolicyName string `json:"policyName,omitempty"`
	// Status is "enabled" or "disabled".
	Status string `json:"status"`
}

// ListUsers lists the server's users by access key (GET list-users).
func (a *Admin) ListUsers(ctx context.Context) (map[string]UserInfo, error) {
	users := map[string]UserInfo{}
	err := a.call(ctx, http.MethodGet, "/list-users", nil, nil, true, &users)
	return users, err
}

// UsersWithServiceAccounts lists the users that have service accounts,
// root included (GET list-access-keys-bulk with all=true, which needs
// admin:ListUsers and admin:ListServiceAccounts).
func (a *Admin) UsersWithServiceAccounts(ctx context.Context) ([]string, error) {
	var resp map[string]json.RawMessage
	q := url.Values{"listType": {"svcacc-only"}, "all": {"true"}}
	if err := a.call(ctx, http.MethodGet, "/list-access-keys-bulk", q, nil, true, &resp); err != nil {
		return nil, err
	}
	users := make([]string, 0, len(resp))
	for u := range resp {
		users = append(users, u)
	}
	return users, nil
}

// UserExists reports whether user is a user of the server (GET user-info).
func (a *Admin) UserExists(ctx context.Context, user string) (bool, error) {
	var info UserInfo
	err := a.call(ctx, http.MethodGet, "/user-info", url.Values{"accessKey": {user}}, nil, false, &info)
	if IsNotFound(err) || isNoSuchUser(err) {
		return false, nil
	}
	return err == nil, err
}

// AddUser creates user (or sets its secret key) with secretKey (8 to 40
// characters), enabled (PUT add-user).
func (a *Admin) AddUser(ctx context.Context, user, secretKey string) error {
	body := struct {
		SecretKey string `json:"secretKey"`
		Status    string `json:"status"`
	}{secretKey, "enabled"}
	return a.call(ctx, http.MethodPut, "/add-user", url.Values{"accessKey": {user}}, body, true, nil)
}

// RandomSecret is a secret key of 40 hex characters, MinIO's longest.
func RandomSecret() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// RemoveUser deletes user and, with it, every service account it is the
// parent of (DELETE remove-user); a user already gone is not an error.
func (a *Admin) RemoveUser(ctx context.Context, user string) error {
	err := a.call(ctx, http.MethodDelete, "/remove-user", url.Values{"accessKey": {user}}, nil, false, nil)
	if IsNotFound(err) || isNoSuchUser(err) {
		return nil
	}
	return err
}

// AddPolicy creates or replaces the canned policy name (PUT
// add-canned-policy; the body is the policy document, not sealed).
func (a *Admin) AddPolicy(ctx context.Context, name string, doc json.RawMessage) error {
	return a.call(ctx, http.MethodPut, "/add-canned-policy", url.Values{"name": {name}}, rawBody(doc), false, nil)
}

// RemovePolicy deletes the canned policy name; one already gone is not an
// error (DELETE remove-canned-policy).
func (a *Admin) RemovePolicy(ctx context.Context, name string) error {
	err := a.call(ctx, http.MethodDelete, "/remove-canned-policy", url.Values{"name": {name}}, nil, false, nil)
	if IsNotFound(err) || apiCode(err) == "XMinioAdminNoSuchPolicy" {
		return nil
	}
	return err
}

// SetUserPolicy makes policy the only canned policy of user (PUT
// set-user-or-group-policy).
func (a *Admin) SetUserPolicy(ctx context.Context, user, policy string) error {
	q := url.Values{"policyName": {policy}, "userOrGroup": {user}, "isGroup": {"false"}}
	return a.call(ctx, http.MethodPut, "/set-user-or-group-policy", q, nil, false, nil)
}

func isNoSuchUser(err error) bool {
	return apiCode(err) == "XMinioAdminNoSuchUser"
}

// rawBody is a request body sent as it is, not JSON-encoded again.
type rawBody []byte

func (r rawBody) MarshalJSON() ([]byte, error) { return bytes.TrimSpace(r), nil }
