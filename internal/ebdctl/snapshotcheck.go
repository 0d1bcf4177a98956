package ebdctl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
)

// snapshotCheck hashes a snapshot as it streams past, holding at most 32
// bytes back: the sha256 of the whole stream (what a Backup's
// status.artifact.checksum records) and the sha256 of all but its last 32
// bytes, which a snapshot from etcd's Maintenance API ends with. Nothing
// else is kept, so any size can be checked in constant memory.
type snapshotCheck struct {
	whole, body hash.Hash
	tail        [sha256.Size]byte
	tailLen     int
	n           int64
}

func newSnapshotCheck() *snapshotCheck {
	return &snapshotCheck{whole: sha256.New(), body: sha256.New()}
}

// Write takes the next bytes of the stream.
func (c *snapshotCheck) Write(p []byte) (int, error) {
	c.whole.Write(p)
	c.n += int64(len(p))
	total := c.tailLen + len(p)
	if total <= len(c.tail) {
		copy(c.tail[c.tailLen:], p)
		c.tailLen = total
		return len(p), nil
	}
	// Everything but the newest 32 bytes belongs to the body.
	release := total - len(c.tail)
	if release <= c.tailLen {
		c.body.Write(c.tail[:release])
		kept := copy(c.tail[:], c.tail[release:c.tailLen])
		copy(c.tail[kept:], p)
	} else {
		c.body.Write(c.tail[:c.tailLen])
		c.body.Write(p[:release-c.tailLen])
		copy(c.tail[:], p[release-c.tailLen:])
	}
	c.tailLen = len(c.tail)
	return len(p), nil
}

// Size is how many bytes went through.
func (c *snapshotCheck) Size() int64 { return c.n }

// Checksum is "sha256:<hex>" of the whole stream.
func (c *snapshotCheck) Checksum() string {
	return "sha256:" + hex.EncodeToString(c.whole.Sum(nil))
}

// HasTrailer reports whether the size is one etcd gives a snapshot with an
// integrity trailer: the database is a whole number of 512-byte sectors,
// the trailer 32 bytes more (etcdutl uses the same test).
func (c *snapshotCheck) HasTrailer() bool {
	return c.n%512 == sha256.Size
}

// TrailerMatches reports whether the last 32 bytes are the sha256 of
// everything before them.
func (c *snapshotCheck) TrailerMatches() bool {
	if c.tailLen != len(c.tail) {
		return false
	}
	return subtle.ConstantTimeCompare(c.body.Sum(nil), c.tail[:]) == 1
}
