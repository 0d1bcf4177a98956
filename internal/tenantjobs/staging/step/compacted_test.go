package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A cluster compacted at a head of deletions by etcd before 3.5.15 (and
// 3.4.33) keeps no key at or above its compaction mark: the compaction
// removed the tombstones with the keys they deleted, so the mark is above
// the newest key. Newer etcds keep the tombstone at the compaction
// revision (etcd-io/etcd#18274), but data compacted by an older one keeps
// that shape through upgrades. etcd restores such a snapshot at the mark;
// so must staging, with every etcd the operator may run.
func TestSnapshotCompactedAtAHeadOfTombstonesIsStaged(t *testing.T) {
	for _, rel := range releases(t) {
		t.Run(rel.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			src := startEtcd(ctx, t, rel.etcd, filepath.Join(dir, "live"))
			cli := client(t, src)
			for i := range 20 {
				put(ctx, t, cli, fmt.Sprintf("/registry/k%02d", i), fmt.Sprintf("v%d", i))
			}
			var head int64
			for i := 10; i < 20; i++ {
				r, err := cli.Delete(ctx, fmt.Sprintf("/registry/k%02d", i))
				if err != nil {
					t.Fatal(err)
				}
				head = r.Header.Revision
			}
			if _, err := cli.Compact(ctx, head, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
			want, rev := dump(ctx, t, cli)
			if rev != head || len(want) != 10 {
				t.Fatalf("live cluster at revision %d with %d keys, want %d and 10", rev, len(want), head)
			}
			snapshot := filepath.Join(dir, "snapshot.db")
			saveSnapshot(ctx, t, cli, snapshot)
			// What the older etcds' compaction left: no tombstone at the
			// mark either.
			dropTombstonesAt(t, snapshot, head)
			cli.Close()
			src.Stop(10 * time.Second)

			// etcd's own restore of it starts at the compaction mark.
			plain := client(t, restoreAsOperator(ctx, t, rel, snapshot, filepath.Join(dir, "restored-plain")))
			if _, rev := dump(ctx, t, plain); rev != head {
				t.Fatalf("etcd restores the snapshot at revision %d, want the compaction mark %d", rev, head)
			}

			b, err := os.ReadFile(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			staged := filepath.Join(dir, "staged", "restore.db")
			if err := os.MkdirAll(filepath.Dir(staged), 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Stage(f, int64(len(b)), hex.EncodeToString(sum[:]), staged, FloorPlan(head))
			f.Close()
			if err != nil {
				reason, _ := Classify(err)
				t.Fatalf("Stage refused a snapshot etcd restores: %v (%s)", err, reason)
			}
			target := head + DefaultMargin
			if res.SnapshotRevision != head || res.Revision != target {
				t.Fatalf("Result %+v; want snapshot revision %d, revision %d", res, head, target)
			}
			cli = client(t, restoreAsOperator(ctx, t, rel, staged, filepath.Join(dir, "restored-staged")))
			got, rev := dump(ctx, t, cli)
			if rev != target {
				t.Fatalf("the staged snapshot restores at revision %d, want %d", rev, target)
			}
			if diff := mapDiff(want, got); diff != "" {
				t.Fatalf("restored data differs from the snapshot's: %s", diff)
			}
			if _, err := cli.Get(ctx, "/registry/k00", clientv3.WithRev(head)); !errors.Is(err, rpctypes.ErrCompacted) {
				t.Fatalf("a read at the live revision %d: %v, want ErrCompacted", head, err)
			}
		})
	}
}

// dropTombstonesAt removes the tombstones at main revision rev from the
// snapshot at path (the database and etcd's trailer), as etcd's compaction
// before 3.5.15 did when it compacted at rev, and writes a fresh trailer.
func dropTombstonesAt(t *testing.T, path string, rev int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db := path + ".db"
	if err := os.WriteFile(db, b[:len(b)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	err = bdb.Update(func(tx *bolt.Tx) error {
		keys := tx.Bucket(keyBucket)
		var doomed [][]byte
		c := keys.Cursor()
		for k, _ := c.Seek(revisionKey(rev, 0)); k != nil; k, _ = c.Next() {
			if main, err := ParseRevisionKey(k); err != nil || main != rev || k[len(k)-1] != markTombstone {
				return fmt.Errorf("key %x at or above the compaction mark %d is not a tombstone at it", k, rev)
			}
			doomed = append(doomed, append([]byte(nil), k...))
		}
		for _, k := range doomed {
			if err := keys.Delete(k); err != nil {
				return err
			}
			dropped++
		}
		return nil
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if dropped == 0 {
		t.Fatalf("no tombstone at revision %d to drop", rev)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, withTrailer(raw), 0o600); err != nil {
		t.Fatal(err)
	}
}
