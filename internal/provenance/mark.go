package provenance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// A mark signs a record the driver keeps where tenants can write (an
// annotation), so that the driver believes only what it wrote: the MAC,
// under the active provenance key, covers a domain naming what the record
// is (and binding it to its object: namespace, name, UID) and the record's
// bytes. The mark names its key, so records keep verifying across a key
// rotation while the old key stays in the keyring.
const markVersion = "k1"

// Mark signs body for domain with the active key.
func Mark(ctx context.Context, keys Keys, domain string, body []byte) (string, error) {
	id, key, err := keys.Active(ctx)
	if err != nil {
		return "", fmt.Errorf("sign %s: %w", strings.TrimSpace(strings.SplitN(domain, "\n", 2)[0]), err)
	}
	mac, err := markSum(key, domain, body)
	if err != nil {
		return "", err
	}
	return markVersion + "." + id + "." + base64.RawURLEncoding.EncodeToString(mac), nil
}

// CheckMark reports whether mark is one Mark made for domain and body. The
// error is only for keys that cannot be read now; a malformed mark, an
// unknown key or another body is false.
func CheckMark(ctx context.Context, keys Keys, domain string, body []byte, mark string) (bool, error) {
	version, rest, _ := strings.Cut(mark, ".")
	id, encoded, ok := strings.Cut(rest, ".")
	mac, decodeErr := base64.RawURLEncoding.DecodeString(encoded)
	if version != markVersion || !ok || !keyID.MatchString(id) || decodeErr != nil {
		return false, nil
	}
	key, err := keys.Lookup(ctx, id)
	if errors.Is(err, ErrUnknownKey) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	want, err := markSum(key, domain, body)
	if err != nil {
		return false, nil
	}
	return hmac.Equal(mac, want), nil
}

func markSum(key []byte, domain string, body []byte) ([]byte, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("provenance key is %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil), nil
}
