package step

import (
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// InspectFile reads the bolt database at path (an etcd snapshot without
// its integrity trailer), read-only, and says what it holds: the live keys
// at its newest revision, classified by a manifest.Counter, its revision (the
// newest key's, or the compaction mark's when higher, as a restore starts
// there) and its compaction mark. InspectedAt is left zero.
//
// The key bucket is walked in revision order keeping the live set (a put
// adds, a tombstone removes), so memory grows with the live keys, not with
// the history. Bytes that are not etcd's layout are s3object.ErrCorrupt;
// failures of this machine (open, lock, read) are stagingstep.LocalError.
func InspectFile(path string) (driverv1alpha1.BackupManifest, error) {
	st, err := os.Stat(path)
	if err != nil {
		return driverv1alpha1.BackupManifest{}, stagingstep.LocalError(fmt.Errorf("stat the snapshot's database: %w", err))
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: stagingstep.OpenTimeout()})
	if err != nil {
		return driverv1alpha1.BackupManifest{}, stagingstep.DatabaseError("open the snapshot's database", err)
	}
	defer db.Close()
	m := driverv1alpha1.BackupManifest{DBSizeBytes: st.Size()}
	counter := manifest.NewCounter()
	err = readGuarded(db, func(tx *bolt.Tx) error {
		keys, meta, err := stagingstep.Buckets(tx)
		if err != nil {
			return err
		}
		marks, err := stagingstep.ReadMarks(keys, meta)
		if err != nil {
			return err
		}
		m.Revision, m.CompactedRevision = marks.SnapshotRevision(), marks.Compacted
		live, err := liveKeys(keys)
		if err != nil {
			return err
		}
		for k := range live {
			counter.Add([]byte(k))
		}
		return nil
	})
	if err != nil {
		return driverv1alpha1.BackupManifest{}, stagingstep.DatabaseError("read the snapshot's database", err)
	}
	m.Keys = counter.Keys()
	m.Keyspaces, m.Truncated = counter.Keyspaces()
	return m, nil
}

// readGuarded runs fn in a read transaction of db, turning a panic into
// ErrCorrupt. bbolt checks only its meta pages: a tree page that is
// garbage fails its assertions with a panic, or reads past the mapping (a
// fault, made a panic here). The file is read-only and closed afterwards,
// so nothing is left half-done; a crash instead would be retried as if
// this machine had failed.
func readGuarded(db *bolt.DB, fn func(*bolt.Tx) error) error {
	return stagingstep.Guarded(func() error { return db.View(fn) })
}

// liveKeys walks bucket "key" in revision order (its byte order) and
// returns the keys alive at the end.
func liveKeys(keys *bolt.Bucket) (map[string]struct{}, error) {
	live := map[string]struct{}{}
	c := keys.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if _, err := stagingstep.ParseRevisionKey(k); err != nil {
			return nil, err
		}
		key, err := keyOf(v)
		if err != nil {
			return nil, fmt.Errorf("revision %x: %w", k, err)
		}
		if key == nil {
			// An empty record: staging's revision bump writes one.
			continue
		}
		if stagingstep.IsTombstone(k) {
			delete(live, string(key))
		} else {
			live[string(key)] = struct{}{}
		}
	}
	return live, nil
}

// errNoKey is a record of bucket "key" that names no key.
var errNoKey = errors.New("a record without a key")

// keyOf reads field 1 (key) of a mvccpb.KeyValue, checking that the whole
// value is well-formed protobuf wire data; an empty value is nil. Decoding
// only the wire format keeps the walk fast (no reflection per record).
func keyOf(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	var key []byte
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return nil, fmt.Errorf("%w: value is not an etcd KeyValue: %w", s3object.ErrCorrupt, protowire.ParseError(n))
		}
		v = v[n:]
		if num == 1 {
			if typ != protowire.BytesType {
				return nil, fmt.Errorf("%w: value is not an etcd KeyValue: key has wire type %d", s3object.ErrCorrupt, typ)
			}
			b, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return nil, fmt.Errorf("%w: value is not an etcd KeyValue: %w", s3object.ErrCorrupt, protowire.ParseError(n))
			}
			key, v = b, v[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, v)
		if n < 0 {
			return nil, fmt.Errorf("%w: value is not an etcd KeyValue: %w", s3object.ErrCorrupt, protowire.ParseError(n))
		}
		v = v[n:]
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: %w", s3object.ErrCorrupt, errNoKey)
	}
	return key, nil
}
