package tenantjobs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// A tenant can create Jobs and claims in its own namespace: a name it can
// derive (from an object's UID, which it can read) it can take first. The
// driver's tenant Jobs are named so it cannot.

// RandomName is prefix and 12 random characters (60 bits): a name no one
// can guess. The staging and rehearsal Jobs are named so, and found again
// by what the driver recorded or by Mine.
func RandomName(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return prefix + string(b)
}

// KeyedName is prefix and a MAC of purpose and uid under key (16
// characters, 80 bits): the same name every time for the same object, so
// the driver finds its Job again without a record, and one the tenant,
// who does not hold key, cannot compute. A key rotation during a Job's
// life only makes the driver start another one.
func KeyedName(prefix string, key []byte, purpose string, uid types.UID) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(purpose + "\n" + string(uid)))
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:10]))
}
