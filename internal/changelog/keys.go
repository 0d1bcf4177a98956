package changelog

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ChainPrefix is where the chain following the base Backup at
// baseRevision lives, under prefix (the tenant's prefix and the
// application's name, e.g. "tenant-a/etcd"):
// <prefix>/changes/<baseRevision>.
func ChainPrefix(prefix string, baseRevision int64) string {
	return prefix + "/changes/" + strconv.FormatInt(baseRevision, 10)
}

// ChainDir is the folder holding the chains of the base snapshot stored
// at key: the snapshot's own folder (a chain lives beside its base).
func ChainDir(key string) string { return path.Dir(key) }

// SegmentKey is the key of segment seq, whose first revision is from:
// <chain>/<seq, 10 digits>-<from>.seg. A reader computes the next key
// from the segment it has just verified (its last revision + 1), so a
// chain is walked without listing; the sequence number first keeps a
// listing in chain order.
func SegmentKey(chain string, seq, from int64) string {
	return fmt.Sprintf("%s/%010d-%d.seg", chain, seq, from)
}

// IndexKey is the key of a chain's index.
func IndexKey(chain string) string { return chain + "/index.json" }

// CheckPrefix refuses a prefix that would not name one folder of the
// bucket: empty, absolute, with an empty or dot segment, or with bytes S3
// keys should not hold.
func CheckPrefix(prefix string) error {
	if prefix == "" || len(prefix) > 512 {
		return fmt.Errorf("prefix %q: must be 1 to 512 characters", prefix)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("prefix %q: empty, . or .. segment", prefix)
		}
	}
	for _, r := range prefix {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("prefix %q: control character or backslash", prefix)
		}
	}
	return nil
}
