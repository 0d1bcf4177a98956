package sharedcreds

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
)

// digest is a keyed hash of an access key id. Two equal digests mean the same
// id (a collision of 128 bits is not a concern); a digest says nothing about
// the id to anyone without the process's key. It is never logged or written.
type digest [16]byte

// hasher computes digests under a key that lives only in this process.
type hasher struct{ key []byte }

// newHasher draws a fresh 32-byte key. crypto/rand never fails on the
// platforms Go supports (it aborts the program instead).
func newHasher() hasher {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return hasher{key: key}
}

// sum returns the digest of accessKeyID.
func (h hasher) sum(accessKeyID string) digest {
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(accessKeyID))
	var d digest
	copy(d[:], mac.Sum(nil))
	return d
}
