package staging

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// etcd's backend layout (go.etcd.io/etcd/server/v3/storage/schema and
// storage/mvcc): bucket "key" maps a revision to a KeyValue, bucket "meta"
// holds the compaction marks. A revision key is the 8-byte big-endian main
// revision, '_', the 8-byte big-endian sub revision, and a trailing 't' on
// tombstones, so byte order is revision order.
var (
	keyBucket          = []byte("key")
	metaBucket         = []byte("meta")
	scheduledCompactID = []byte("scheduledCompactRev")
	finishedCompactID  = []byte("finishedCompactRev")
)

const (
	revKeyLen     = 8 + 1 + 8
	markTombstone = 't'
)

// revisionKey is etcd's bytes of revision {main, sub}.
func revisionKey(main, sub int64) []byte {
	b := make([]byte, revKeyLen)
	binary.BigEndian.PutUint64(b[0:8], uint64(main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:], uint64(sub))
	return b
}

// parseRevisionKey returns the main revision of a key of bucket "key" (or
// of a compaction mark), refusing anything that is not etcd's layout.
func parseRevisionKey(k []byte) (int64, error) {
	ok := (len(k) == revKeyLen || (len(k) == revKeyLen+1 && k[revKeyLen] == markTombstone)) && k[8] == '_'
	main := int64(0)
	if ok {
		main = int64(binary.BigEndian.Uint64(k[0:8]))
	}
	if !ok || main < 0 {
		return 0, fmt.Errorf("%w: %x is not an etcd revision key", s3object.ErrCorrupt, k)
	}
	return main, nil
}

// edit is what bumpRevision did.
type edit struct {
	snapshotRevision int64
	target           int64
}

// bumpRevision opens the bolt database at path and makes the edit etcdutl's
// `snapshot restore --bump-revision --mark-compacted` makes
// (etcdutl/snapshot/v3_snapshot.go, modifyLatestRevision): it writes an
// empty record at revision {target, 0} in bucket "key", so that revision is
// the keyspace's latest, and schedules a compaction at target in bucket
// "meta", which etcd finishes when it boots; every revision up to target
// then answers ErrCompacted.
func bumpRevision(path string, p Plan) (edit, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return edit{}, fmt.Errorf("%w: open the snapshot's database: %w", s3object.ErrCorrupt, err)
	}
	var e edit
	err = db.Update(func(tx *bolt.Tx) error {
		keys, meta := tx.Bucket(keyBucket), tx.Bucket(metaBucket)
		if keys == nil || meta == nil {
			return fmt.Errorf("%w: no %q or %q bucket, not an etcd v3 database", s3object.ErrCorrupt, keyBucket, metaBucket)
		}
		last, _ := keys.Cursor().Last()
		if last == nil {
			// etcd writes nothing in "key" until the first write;
			// such a snapshot restores at revision 1 regardless.
			e.snapshotRevision = 1
		} else if e.snapshotRevision, err = parseRevisionKey(last); err != nil {
			return err
		}
		if e.target, err = p.Target(e.snapshotRevision); err != nil {
			return err
		}
		for _, mark := range [][]byte{scheduledCompactID, finishedCompactID} {
			if v := meta.Get(mark); v != nil {
				rev, err := parseRevisionKey(v)
				if err != nil {
					return fmt.Errorf("%s: %w", mark, err)
				}
				if rev > e.snapshotRevision {
					return fmt.Errorf("%w: %s %d is above the latest revision %d", s3object.ErrCorrupt, mark, rev, e.snapshotRevision)
				}
			}
		}
		if err := keys.Put(revisionKey(e.target, 0), []byte{}); err != nil {
			return fmt.Errorf("write the revision record: %w", err)
		}
		if err := meta.Put(scheduledCompactID, revisionKey(e.target, 0)); err != nil {
			return fmt.Errorf("write the compaction mark: %w", err)
		}
		return nil
	})
	if cerr := db.Close(); err == nil && cerr != nil {
		err = localError{fmt.Errorf("close the staged database: %w", cerr)}
	}
	if err != nil {
		return edit{}, err
	}
	return e, nil
}
