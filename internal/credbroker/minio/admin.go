// Package minio is the credential broker's MinIO provider: per-tenant
// service accounts with an inline policy, created, rotated and removed
// through MinIO's admin API (/minio/admin/v3).
//
// The admin client here is this project's own: MinIO's server and its
// madmin-go client are AGPL-licensed and are not imported. It signs requests
// with minio-go's SigV4 signer (Apache-2.0) and seals request bodies in the
// admin API's encrypted envelope (crypt.go).
package minio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

const adminPrefix = "/minio/admin/v3"

// Admin is a client of the MinIO admin API signed with one credential.
type Admin struct {
	endpoint  *url.URL
	accessKey string
	secretKey string
	http      *http.Client
}

// NewAdmin returns a client of the server at endpoint (scheme://host[:port])
// that signs as accessKey. httpClient nil means http.DefaultClient.
func NewAdmin(endpoint, accessKey, secretKey string, httpClient *http.Client) (*Admin, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("minio admin endpoint %q: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("minio admin endpoint %q is not an http(s) URL with a host", endpoint)
	}
	if accessKey == "" || secretKey == "" {
		return nil, errors.New("minio admin credential is empty")
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Admin{endpoint: &url.URL{Scheme: u.Scheme, Host: u.Host}, accessKey: accessKey, secretKey: secretKey, http: httpClient}, nil
}

// AccessKey is the access key id the client signs with.
func (a *Admin) AccessKey() string { return a.accessKey }

// APIError is an error response of the admin API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is MinIO's error code, for example XMinioAdminNoSuchServiceAccount.
	Code string `json:"Code"`
	// Message is the server's explanation.
	Message string `json:"Message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("minio admin API: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err says the service account does not exist.
func IsNotFound(err error) bool {
	var api *APIError
	return errors.As(err, &api) && (api.Code == "XMinioAdminNoSuchServiceAccount" || api.Status == http.StatusNotFound)
}

// apiCode is MinIO's error code of err, or "" when err is not an
// APIError.
func apiCode(err error) string {
	var api *APIError
	if errors.As(err, &api) {
		return api.Code
	}
	return ""
}

// IsAccessDenied reports whether err is the server refusing the credential.
func IsAccessDenied(err error) bool {
	var api *APIError
	return errors.As(err, &api) && (api.Code == "AccessDenied" || api.Status == http.StatusForbidden)
}

// Raw sends one signed admin request this client has no method for (path
// below /minio/admin/v3; sealed bodies and responses in the admin API's
// envelope). Tests use it to act as other admin tools do (an
// update-service-account without a policy, as `mc admin user svcacct
// edit` sends); the broker never does.
func (a *Admin) Raw(ctx context.Context, method, path string, query url.Values, body any, sealed bool, out any) error {
	return a.call(ctx, method, path, query, body, sealed, out)
}

// call sends one signed request. A sealed request body is encrypted with
// the signing secret key; a sealed response is decrypted with it.
func (a *Admin) call(ctx context.Context, method, path string, query url.Values, body any, sealed bool, out any) error {
	var payload []byte
	if body != nil {
		plain, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s body: %w", path, err)
		}
		payload = plain
		if sealed {
			if payload, err = seal(a.secretKey, plain); err != nil {
				return fmt.Errorf("seal %s body: %w", path, err)
			}
		}
	}
	u := *a.endpoint
	u.Path = adminPrefix + path
	u.RawQuery = strings.ReplaceAll(query.Encode(), "+", "%20")
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.ContentLength = int64(len(payload))
	sum := sha256.Sum256(payload)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req = signer.SignV4(*req, a.accessKey, a.secretKey, "", "")
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		apiErr := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(data, apiErr) != nil || apiErr.Code == "" {
			apiErr.Code, apiErr.Message = http.StatusText(resp.StatusCode), textlimit.Value(string(data))
		}
		return apiErr
	}
	if out == nil {
		return nil
	}
	if sealed {
		if data, err = open(a.secretKey, data); err != nil {
			return fmt.Errorf("%s %s: open response: %w", method, path, err)
		}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}
