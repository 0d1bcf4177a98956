package changereplay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/lease"
	"go.uber.org/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/scratchetcd"
)

// The scratch etcd holds a base lease of 2 seconds with etcd's largest
// TTL, so it cannot expire mid-replay and delete its key in a revision
// of its own (without the edit, the same scratch etcd holds it for 2
// seconds); the snapshot gives it its 2 seconds back.
func TestBaseLeasesCannotExpireMidReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cli := startEtcd(ctx, t, filepath.Join(t.TempDir(), "live"), "")
	l, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/masterleases/10.0.0.1", "ip", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	base, _ := takeBase(ctx, t, cli)

	for _, edit := range []bool{false, true} {
		m, err := scratchetcd.Restore(base, filepath.Join(t.TempDir(), "scratch"))
		if err != nil {
			t.Fatal(err)
		}
		h := held{}
		if edit {
			if h, err = quiesce(m.DBPath()); err != nil {
				t.Fatal(err)
			}
		}
		e, err := scratchetcd.Start(ctx, m, scratchetcd.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Client(0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.TimeToLive(ctx, l.ID)
		c.Close()
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{false: 2, true: lease.MaxLeaseTTL}[edit]; r.GrantedTTL != want || h.ttl[int64(l.ID)] != map[bool]int64{true: 2}[edit] {
			t.Fatalf("edited %v: the scratch etcd holds the lease with TTL %d (kept %v), want %d", edit, r.GrantedTTL, h.ttl, want)
		}
	}
}

// A base with auth on replays (the scratch etcd runs with auth off) and
// its snapshot has auth on again, with its users.
func TestAuthIsPutBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, cli := startEtcd(ctx, t, filepath.Join(t.TempDir(), "live"), "")
	if _, err := cli.Put(ctx, "/registry/pods/a", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserAdd(ctx, "root", "secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Spec.ClientURL}, Username: "root", Password: "secret", DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	base, b := takeBase(ctx, t, root)
	idx, stored := handChain(t, b, changelog.Revision{Revision: b.Revision + 1, Time: time.Now(),
		Events: []changelog.Event{{Type: changelog.Put, Key: []byte("/registry/pods/a"), Value: []byte("2")}}})
	out := filepath.Join(t.TempDir(), "replayed.db")
	if _, err := Replay(ctx, Input{Base: base, Index: idx, Segments: stored, Target: changelog.Target{Revision: b.Revision + 1},
		WorkDir: t.TempDir(), Out: out, Limits: changelog.DefaultLimits}); err != nil {
		t.Fatal(err)
	}
	dir, peer := etcdutlRestore(ctx, t, out)
	restored := launch(t, dir, peer)
	asRoot, err := clientv3.New(clientv3.Config{Endpoints: []string{restored.Spec.ClientURL}, Username: "root", Password: "secret", DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer asRoot.Close()
	r, err := asRoot.Get(ctx, "/registry/pods/a")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "2" || r.Header.Revision != b.Revision+1 {
		t.Fatalf("root reads %v (%v) from the restored etcd, want the replayed value at revision %d", r, err, b.Revision+1)
	}
	anyone, err := etcdproc.Client(restored.Spec.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	defer anyone.Close()
	if _, err := anyone.Get(ctx, "/registry/pods/a"); !errors.Is(err, rpctypes.ErrUserEmpty) && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("a read without a user from the restored etcd: %v, want it refused", err)
	}
}

// handChain is a chain of one segment holding revs, written to a file
// as a capture would have stored it, and its index.
func handChain(t *testing.T, b changelog.Base, revs ...changelog.Revision) (changelog.Index, []changelog.Stored) {
	t.Helper()
	return handSegments(t, b, [][]changelog.Revision{revs})
}

// handSegments is a chain of one segment per group of revisions.
func handSegments(t *testing.T, b changelog.Base, groups [][]changelog.Revision) (changelog.Index, []changelog.Stored) {
	t.Helper()
	var prev [32]byte
	copy(prev[:], mustHex(t, b.SHA256))
	idx := changelog.NewIndex(b, time.Now())
	var stored []changelog.Stored
	from := b.Revision + 1
	for seq, revs := range groups {
		w := changelog.NewWriter(changelog.Start{Seq: int64(seq), BaseRevision: b.Revision, From: from, ClusterID: 1, Prev: prev}, changelog.DefaultLimits)
		for _, rv := range revs {
			if err := w.Begin(rv.Revision); err != nil {
				t.Fatal(err)
			}
			for _, ev := range rv.Events {
				var err error
				if ev.Type == changelog.Delete {
					err = w.Delete(ev.Key)
				} else {
					err = w.Put(ev.Key, ev.Value, ev.Lease)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := w.End(rv.Time); err != nil {
				t.Fatal(err)
			}
		}
		seg, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), fmt.Sprintf("%d.seg", seq))
		if err := os.WriteFile(path, seg.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		key := changelog.SegmentKey("c", int64(seq), from)
		idx = idx.WithSegment(seg, key, time.Now())
		stored = append(stored, changelog.Stored{Seq: int64(seq), Key: key, Path: path, RecordedSHA256: hex.EncodeToString(seg.SHA256[:])})
		prev, from = seg.SHA256, seg.Header.To+1
	}
	return idx, stored
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
