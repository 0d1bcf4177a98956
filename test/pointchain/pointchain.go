// Package pointchain makes real fixtures for the tests of a restore to a
// point: a base snapshot of a real etcd, a chain of changes after it in a
// real S3 bucket (written by the changelog writer, stored as the capture
// stores it: each segment with its sha256 beside it, then the index), and
// the keys a snapshot file holds at its newest revision.
package pointchain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
)

// Snapshot is the etcd's snapshot as its Maintenance API gives it (with
// the integrity trailer), and the base a chain after it follows.
func Snapshot(ctx context.Context, t testing.TB, cli *clientv3.Client) ([]byte, changelog.Base) {
	t.Helper()
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return b, changelog.Base{Revision: st.Header.Revision, SHA256: hex.EncodeToString(sum[:])}
}

// Put is one revision putting each key of kv (key, value, key, value...).
func Put(rev int64, at time.Time, kv ...string) changelog.Revision {
	r := changelog.Revision{Revision: rev, Time: at}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Events = append(r.Events, changelog.Event{Type: changelog.Put, Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return r
}

// Delete is one revision deleting keys.
func Delete(rev int64, at time.Time, keys ...string) changelog.Revision {
	r := changelog.Revision{Revision: rev, Time: at}
	for _, k := range keys {
		r.Events = append(r.Events, changelog.Event{Type: changelog.Delete, Key: []byte(k)})
	}
	return r
}

// Segment is one stored segment: its key and bytes.
type Segment struct {
	Key  string
	Data []byte
}

// Upload writes groups (one segment each, revisions following base) into
// store's chain and the index naming them, as the capture does, and
// returns the segments as stored.
func Upload(ctx context.Context, t testing.TB, store changelog.Store, base changelog.Base, groups ...[]changelog.Revision) []Segment {
	t.Helper()
	var prev [32]byte
	sum, err := hex.DecodeString(base.SHA256)
	if err != nil || len(sum) != 32 {
		t.Fatalf("base sha256 %q", base.SHA256)
	}
	copy(prev[:], sum)
	idx := changelog.NewIndex(base, time.Now())
	var out []Segment
	from := base.Revision + 1
	for seq, revs := range groups {
		w := changelog.NewWriter(changelog.Start{Seq: int64(seq), BaseRevision: base.Revision, From: from, ClusterID: 1, Prev: prev}, changelog.DefaultLimits)
		for _, rv := range revs {
			if err := write(w, rv); err != nil {
				t.Fatal(err)
			}
		}
		seg, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		key, err := store.PutSegment(ctx, seg)
		if err != nil {
			t.Fatal(err)
		}
		idx = idx.WithSegment(seg, key, time.Now())
		out = append(out, Segment{Key: key, Data: seg.Data})
		prev, from = seg.SHA256, seg.Header.To+1
	}
	if err := store.PutIndex(ctx, idx); err != nil {
		t.Fatal(err)
	}
	return out
}

func write(w *changelog.Writer, rv changelog.Revision) error {
	if err := w.Begin(rv.Revision); err != nil {
		return err
	}
	for _, ev := range rv.Events {
		var err error
		if ev.Type == changelog.Delete {
			err = w.Delete(ev.Key)
		} else {
			err = w.Put(ev.Key, ev.Value, ev.Lease)
		}
		if err != nil {
			return err
		}
	}
	return w.End(rv.Time)
}

// Replace overwrites the object at key with data, keeping recorded as the
// sha256 beside it: a segment corrupted or swapped in the bucket.
func Replace(ctx context.Context, t testing.TB, store changelog.Store, key string, data []byte, recorded string) {
	t.Helper()
	loc := store.Bucket
	loc.Key = key
	if err := store.S3.Put(ctx, loc, store.Creds, bytes.NewReader(data), int64(len(data)), map[string]string{changelog.MetaSHA256: recorded}); err != nil {
		t.Fatal(err)
	}
}

// SHA256 is data's sha256 in hex, as recorded beside a segment.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Keys reads the snapshot file (with its integrity trailer) and returns
// the keys it holds at its newest revision with their values, and that
// revision.
func Keys(t testing.TB, file string) (map[string]string, int64) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "snapshot.db")
	if err := os.WriteFile(db, b[:len(b)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(db, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	kvs := map[string]string{}
	var latest int64
	err = bdb.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte("key"))
		if bk == nil {
			return fmt.Errorf("no key bucket")
		}
		return bk.ForEach(func(k, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return err
			}
			latest = max(latest, int64(binary.BigEndian.Uint64(k[:8])))
			if len(k) == 18 && k[17] == 't' {
				delete(kvs, string(kv.Key))
				return nil
			}
			if len(kv.Key) > 0 {
				// An empty key is the staging step's revision mark.
				kvs[string(kv.Key)] = string(kv.Value)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return kvs, latest
}
