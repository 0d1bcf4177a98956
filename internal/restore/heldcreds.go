package restore

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// heldCreds keeps the credentials a restore's pre-flight read (before its
// claim) for the artifact check that follows it, so the Secret is read
// once per restore, not twice. An entry is used once, only for the same
// Secret, and only within credsHeldFor of its read; a check whose held
// key S3 refuses reads the Secret again (a rotation in between) before it
// concludes anything. A restart forgets them all and the check reads.
type heldCreds struct {
	mu sync.Mutex
	m  map[types.UID]heldEntry
}

type heldEntry struct {
	secret string
	creds  s3object.Credentials
	at     time.Time
}

// credsHeldFor bounds how old held credentials may be.
const credsHeldFor = time.Minute

func (h *heldCreds) hold(uid types.UID, secret string, c s3object.Credentials, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[types.UID]heldEntry{}
	}
	for k, e := range h.m {
		// Restores that read and then never checked (refused in
		// pre-flight, deleted) leave nothing behind for long.
		if now.Sub(e.at) > credsHeldFor {
			delete(h.m, k)
		}
	}
	h.m[uid] = heldEntry{secret: secret, creds: c, at: now}
}

// take returns (and forgets) what was held for uid and secret, if fresh.
func (h *heldCreds) take(uid types.UID, secret string, now time.Time) (s3object.Credentials, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[uid]
	delete(h.m, uid)
	if !ok || e.secret != secret || now.Sub(e.at) > credsHeldFor || now.Before(e.at) {
		return s3object.Credentials{}, false
	}
	return e.creds, true
}

func (h *heldCreds) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, uid)
}
