package changereplay

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/etcd/server/v3/lease/leasepb"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"
)

// unknownTTL is the TTL of a lease the capture found gone: it expires as
// soon as the restored etcd allows.
const unknownTTL = 1

// held is what the replay takes out of the base's data for the scratch
// etcd's run and puts back into the snapshot.
type held struct {
	// ttl is each base lease's TTL.
	ttl map[int64]int64
	// auth is the base's auth switch (nil when it has none).
	auth []byte
	// alarms are the base's alarm records.
	alarms map[string][]byte
}

// quiesce edits the restored database at path before the scratch etcd
// boots: every lease's TTL raised to etcd's largest, auth off, alarms
// cleared. It returns what it changed.
func quiesce(path string) (held, error) {
	h := held{ttl: map[int64]int64{}, alarms: map[string][]byte{}}
	err := update(path, func(tx *bolt.Tx) error {
		if b := tx.Bucket(schema.Lease.Name()); b != nil {
			err := rewriteLeases(b, func(l *leasepb.Lease) {
				h.ttl[l.ID] = l.TTL
				l.TTL = lease.MaxLeaseTTL
			})
			if err != nil {
				return err
			}
		}
		if b := tx.Bucket(schema.Auth.Name()); b != nil {
			if v := b.Get(schema.AuthEnabledKeyName); v != nil {
				h.auth = append([]byte(nil), v...)
				if err := b.Put(schema.AuthEnabledKeyName, []byte{0}); err != nil {
					return err
				}
			}
		}
		if b := tx.Bucket(schema.Alarm.Name()); b != nil {
			err := b.ForEach(func(k, v []byte) error {
				h.alarms[string(k)] = append([]byte(nil), v...)
				return nil
			})
			if err != nil {
				return err
			}
			for k := range h.alarms {
				if err := b.Delete([]byte(k)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return h, err
}

// restore puts back into the snapshot database at path what quiesce
// took out: every lease's TTL (a base lease's own, another's as noted,
// unknownTTL when the capture found it gone), the auth switch, the
// alarms.
func (h held) restore(path string, noted map[int64]int64) error {
	return update(path, func(tx *bolt.Tx) error {
		if b := tx.Bucket(schema.Lease.Name()); b != nil {
			err := rewriteLeases(b, func(l *leasepb.Lease) {
				ttl, ok := h.ttl[l.ID]
				if !ok {
					ttl = noted[l.ID]
				}
				l.TTL, l.RemainingTTL = max(ttl, unknownTTL), 0
			})
			if err != nil {
				return err
			}
		}
		if h.auth != nil {
			b := tx.Bucket(schema.Auth.Name())
			if b == nil {
				return fmt.Errorf("the snapshot lost its auth bucket")
			}
			if err := b.Put(schema.AuthEnabledKeyName, h.auth); err != nil {
				return err
			}
		}
		if len(h.alarms) > 0 {
			b, err := tx.CreateBucketIfNotExists(schema.Alarm.Name())
			if err != nil {
				return err
			}
			for k, v := range h.alarms {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// rewriteLeases applies edit to every lease record of b.
func rewriteLeases(b *bolt.Bucket, edit func(*leasepb.Lease)) error {
	type record struct{ k, v []byte }
	var out []record
	err := b.ForEach(func(k, v []byte) error {
		var l leasepb.Lease
		if err := proto.Unmarshal(v, &l); err != nil || len(k) != 8 || int64(binary.BigEndian.Uint64(k)) != l.ID {
			return fmt.Errorf("lease record %x is not etcd's", k)
		}
		edit(&l)
		nv, err := proto.Marshal(&l)
		if err != nil {
			return err
		}
		out = append(out, record{append([]byte(nil), k...), nv})
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range out {
		if err := b.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// update runs fn in a write transaction of the bolt database at path.
func update(path string, fn func(*bolt.Tx) error) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.Update(fn); err != nil {
		db.Close()
		return fmt.Errorf("edit %s: %w", path, err)
	}
	return db.Close()
}
