package step

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

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

// IsTombstone says whether a key of bucket "key" marks a deletion.
func IsTombstone(k []byte) bool { return len(k) == revKeyLen+1 && k[revKeyLen] == markTombstone }

// Buckets returns bucket "key" and bucket "meta" of an etcd database,
// refusing (ErrCorrupt) a database without them.
func Buckets(tx *bolt.Tx) (keys, meta *bolt.Bucket, err error) {
	keys, meta = tx.Bucket(keyBucket), tx.Bucket(metaBucket)
	if keys == nil || meta == nil {
		return nil, nil, fmt.Errorf("%w: no %q or %q bucket, not an etcd v3 database", s3object.ErrCorrupt, keyBucket, metaBucket)
	}
	return keys, meta, nil
}

// Marks are the revisions etcd's layout records for a snapshot.
type Marks struct {
	// Newest is the newest key's revision (1 when the keyspace was
	// never written: such a snapshot restores at revision 1).
	Newest int64
	// Compacted is the larger of the scheduled and the finished
	// compaction marks (0: none).
	Compacted int64
}

// SnapshotRevision is the revision the snapshot restores at: its newest
// key's, or its compaction mark's when that is higher (a compaction at a
// head of deletions removes the tombstones, leaving the mark above every
// key). etcd's own restore starts there too.
func (m Marks) SnapshotRevision() int64 { return max(m.Newest, m.Compacted) }

func ReadMarks(keys, meta *bolt.Bucket) (Marks, error) {
	m := Marks{Newest: 1}
	if last, _ := keys.Cursor().Last(); last != nil {
		rev, err := ParseRevisionKey(last)
		if err != nil {
			return Marks{}, err
		}
		m.Newest = rev
	}
	for _, mark := range [][]byte{scheduledCompactID, finishedCompactID} {
		if v := meta.Get(mark); v != nil {
			rev, err := ParseRevisionKey(v)
			if err != nil {
				return Marks{}, fmt.Errorf("%s: %w", mark, err)
			}
			m.Compacted = max(m.Compacted, rev)
		}
	}
	return m, nil
}

// ParseRevisionKey returns the main revision of a key of bucket "key" (or
// of a compaction mark), refusing anything that is not etcd's layout.
func ParseRevisionKey(k []byte) (int64, error) {
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

// OpenTimeout bounds the wait for a database file's lock, for other
// readers of a staged or fetched snapshot.
func OpenTimeout() time.Duration { return openTimeout }

// openTimeout bounds the wait for the database file's lock.
var openTimeout = 10 * time.Second

// bumpRevision opens the bolt database at path and makes the edit etcdutl's
// `snapshot restore --bump-revision --mark-compacted` makes
// (etcdutl/snapshot/v3_snapshot.go, modifyLatestRevision): it writes an
// empty record at revision {target, 0} in bucket "key", so that revision is
// the keyspace's latest, and schedules a compaction at target in bucket
// "meta", which etcd finishes when it boots; every revision up to target
// then answers ErrCompacted.
//
// The snapshot's revision is the larger of its newest key and its
// compaction marks: etcd's own restore starts there too (a compaction at
// a head of deletions removes the tombstones, leaving the mark above every
// key). Errors are sorted by cause (DatabaseError): what is wrong with the
// bytes is ErrCorrupt, what went wrong on this machine is local.
func bumpRevision(path string, p Plan) (edit, error) {
	var db *bolt.DB
	err := Guarded(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
		return err
	})
	if err != nil {
		return edit{}, DatabaseError("open the snapshot's database", err)
	}
	var e edit
	err = Guarded(func() error {
		return db.Update(func(tx *bolt.Tx) error {
			keys, meta, err := Buckets(tx)
			if err != nil {
				return err
			}
			marks, err := ReadMarks(keys, meta)
			if err != nil {
				return err
			}
			e.snapshotRevision = marks.SnapshotRevision()
			if e.target, err = p.Target(e.snapshotRevision); err != nil {
				return err
			}
			if err := keys.Put(revisionKey(e.target, 0), []byte{}); err != nil {
				return DatabaseError("write the revision record", err)
			}
			if err := meta.Put(scheduledCompactID, revisionKey(e.target, 0)); err != nil {
				return DatabaseError("write the compaction mark", err)
			}
			return nil
		})
	})
	if err != nil {
		// The edit's own refusals, or the commit's write or sync.
		err = DatabaseError("edit the snapshot's database", err)
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = localError{fmt.Errorf("close the staged database: %w", cerr)}
	}
	if err != nil {
		return edit{}, err
	}
	return e, nil
}

// Guarded runs fn (bolt's open or a transaction), turning a panic of
// bolt's (a page that is not bolt's: bolt checks only its meta pages, and
// the trailer only proves whoever wrote the bytes computed it) into
// ErrCorrupt. bolt rolls a transaction back on a panic; the file is the
// staging's own temporary copy, removed on any error.
func Guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: the database's pages are not bolt's: %v", s3object.ErrCorrupt, p)
		}
	}()
	return fn()
}

// DatabaseError sorts an error of the bolt database by cause. The bytes
// are exactly the recorded ones (size, sha256 and etcd's trailer were
// checked), so only what bolt or the edit finds wrong in them is
// ErrCorrupt, refused for good: invalid meta pages, a version or checksum
// mismatch, a value where etcd keeps none, or etcd's layout broken. Any
// other failure — the file's lock, mmap, reads, writes and syncs, a full
// or read-only volume — is local to this attempt and retried.
func DatabaseError(what string, err error) error {
	var local localError
	switch {
	case errors.Is(err, s3object.ErrCorrupt), errors.Is(err, ErrPlan), errors.As(err, &local):
		return err
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrIncompatibleValue),
		// A file shorter than two of its pages: bbolt does not export
		// this error (db.go, fileSize), so it is known by its words.
		strings.Contains(err.Error(), "file size too small"):
		return fmt.Errorf("%w: %s: %w", s3object.ErrCorrupt, what, err)
	}
	return localError{fmt.Errorf("%s: %w", what, err)}
}
