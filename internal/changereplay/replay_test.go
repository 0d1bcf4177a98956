package changereplay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changereplay"
)

// history is a live etcd, a base Backup of it, and a chain captured by
// the real capture step while the etcd was written: puts, overwrites,
// multi-key transactions, deletes, a range delete, keys of leases
// granted before and after the base, a revoked lease, and a namespace
// created, then deleted after the moment between.
type history struct {
	live    *clientv3.Client
	base    string
	idx     changelog.Index
	stored  []changelog.Stored
	baseRev int64
	created int64     // the revision after the namespace's creation
	between time.Time // after its creation was durable, before its deletion
	final   int64
	leases  map[clientv3.LeaseID]int64 // lease -> granted TTL
}

func record(ctx context.Context, t *testing.T) history {
	t.Helper()
	m, cli := changereplay.StartEtcd(ctx, t, filepath.Join(t.TempDir(), "live"), "")
	h := history{live: cli, leases: map[clientv3.LeaseID]int64{}}
	put := func(k, v string, opts ...clientv3.OpOption) {
		if _, err := cli.Put(ctx, k, v, opts...); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(ttl int64) clientv3.LeaseID {
		l, err := cli.Grant(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		h.leases[l.ID] = ttl
		return l.ID
	}
	for i := range 20 {
		put(fmt.Sprintf("/registry/pods/default/p%02d", i), fmt.Sprintf(`{"gen":0,"i":%d}`, i))
	}
	before := grant(600)
	put("/registry/events/default/before", "e", clientv3.WithLease(before))
	var b changelog.Base
	h.base, b = changereplay.TakeBase(ctx, t, cli)
	h.baseRev = b.Revision
	c := startCapture(t, m.Spec.ClientURL, b)

	after, revoked := grant(1200), grant(900)
	for i := range 40 {
		put(fmt.Sprintf("/registry/pods/default/p%02d", i%25), fmt.Sprintf(`{"gen":%d}`, i))
		if i%5 == 0 {
			put(fmt.Sprintf("/registry/events/default/e%02d", i), "e", clientv3.WithLease(after))
			put(fmt.Sprintf("/registry/events/default/r%02d", i), "r", clientv3.WithLease(revoked))
			put("/registry/events/default/before", fmt.Sprintf("again %d", i), clientv3.WithLease(before))
		}
		if i%7 == 0 {
			_, err := cli.Txn(ctx).Then(clientv3.OpPut("/registry/configmaps/a", fmt.Sprint(i)), clientv3.OpPut("/registry/secrets/a", fmt.Sprint(i)),
				clientv3.OpDelete(fmt.Sprintf("/registry/pods/default/p%02d", i%20))).Commit()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := cli.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		put(fmt.Sprintf("/registry/namespaces/doomed/obj%d", i), "o")
	}
	put("/registry/namespaces/doomed", `{"kind":"Namespace"}`)
	h.created = changereplay.RevisionOf(ctx, t, cli)
	for {
		idx, err := c.store.ReadIndex(ctx)
		if err == nil && idx.Newest.Revision >= h.created {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.between = time.Now()
	// Times are kept to the millisecond: the deletion comes in a later one.
	time.Sleep(2 * time.Millisecond)
	if _, err := cli.Delete(ctx, "/registry/namespaces/doomed", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		put(fmt.Sprintf("/registry/pods/other/q%d", i), "q")
	}
	h.final = changereplay.RevisionOf(ctx, t, cli)
	h.idx, h.stored = c.stopAt(ctx, t, h.final)
	return h
}

// dump is every key of the etcd at rev (0: now) with what etcd keeps
// about it, and the revision it answered at.
func dump(ctx context.Context, t *testing.T, cli *clientv3.Client, rev int64) ([]*mvccpb.KeyValue, int64) {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithFromKey()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	r, err := cli.Get(ctx, "\x00", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r.Kvs, r.Header.Revision
}

func sameKVs(t *testing.T, got, want []*mvccpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.CreateRevision != w.CreateRevision ||
			g.ModRevision != w.ModRevision || g.Version != w.Version || g.Lease != w.Lease {
			t.Fatalf("key %q: %q created %d modified %d version %d lease %x; the live etcd had %q: %q %d %d %d %x",
				g.Key, g.Value, g.CreateRevision, g.ModRevision, g.Version, g.Lease, w.Key, w.Value, w.CreateRevision, w.ModRevision, w.Version, w.Lease)
		}
	}
}

// receivedAt is the newest revision of the chain received at or before
// at, read from the segments directly.
func receivedAt(t *testing.T, stored []changelog.Stored, base int64, at time.Time) int64 {
	t.Helper()
	rev := base
	for _, s := range stored {
		f, err := os.Open(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := changelog.NewReader(f, changelog.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rv, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rv.Time.After(at) {
				rev = rv.Revision
			}
		}
		f.Close()
	}
	return rev
}

// A replay to revision T, restored as the etcd-operator restores, holds
// exactly the keys the live etcd had at T, with their values, create and
// mod revisions, versions and leases, at revision T; a replay to a time
// picks the newest revision received by then (the deleted namespace is
// back between its creation and its deletion); leases keep their TTLs.
func TestReplayReproducesTheEtcdAtThePoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := record(ctx, t)
	if h.idx.Segments < 2 {
		t.Fatalf("the chain has %d segments; the test wants more than one", h.idx.Segments)
	}
	for _, tc := range []struct {
		name   string
		target changelog.Target
		want   int64
	}{
		{"the base", changelog.Target{Revision: h.baseRev}, h.baseRev},
		{"the first change", changelog.Target{Revision: h.baseRev + 1}, h.baseRev + 1},
		{"the namespace created", changelog.Target{Revision: h.created}, h.created},
		{"the newest change", changelog.Target{Revision: h.final}, h.final},
		{"between creation and deletion", changelog.Target{Time: h.between}, receivedAt(t, h.stored, h.baseRev, h.between)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want < h.created && tc.target.Revision == 0 {
				t.Fatalf("the time between resolves to %d, before the creation at %d", tc.want, h.created)
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "replayed.db")
			res, err := changereplay.Replay(ctx, changereplay.Input{Base: h.base, Index: h.idx, Segments: h.stored, Target: tc.target,
				WorkDir: dir, Out: out, Limits: changelog.DefaultLimits})
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision != tc.want || res.Revisions != tc.want-h.baseRev {
				t.Fatalf("replayed to revision %d (%d revisions), want %d", res.Revision, res.Revisions, tc.want)
			}
			restored := changereplay.RestoreAsOperator(ctx, t, out)
			got, rev := dump(ctx, t, restored, 0)
			want, _ := dump(ctx, t, h.live, tc.want)
			if rev != tc.want {
				t.Fatalf("the restored etcd is at revision %d, want %d", rev, tc.want)
			}
			sameKVs(t, got, want)
			if doomed := hasKey(got, "/registry/namespaces/doomed"); doomed != (tc.want >= h.created && tc.want < h.final) {
				t.Fatalf("at revision %d the deleted namespace is there: %v", tc.want, doomed)
			}
			for id, ttl := range h.leases {
				live, err := h.live.TimeToLive(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				r, err := restored.TimeToLive(ctx, id, clientv3.WithAttachedKeys())
				if err != nil {
					t.Fatal(err)
				}
				attached := 0
				for _, kv := range got {
					if kv.Lease == int64(id) {
						attached++
					}
				}
				if attached > 0 && (r.GrantedTTL != ttl || len(r.Keys) != attached) {
					t.Fatalf("lease %x (TTL %d, live %d) restored with TTL %d and %d keys, want %d", id, ttl, live.TTL, r.GrantedTTL, len(r.Keys), attached)
				}
			}
			t.Logf("revision %d: %d keys, %d events applied, snapshot of %d bytes", res.Revision, len(got), res.Events, res.Size)
		})
	}
	_, err := changereplay.Replay(ctx, changereplay.Input{Base: h.base, Index: h.idx, Segments: h.stored, Target: changelog.Target{Time: time.Now()},
		WorkDir: t.TempDir(), Out: filepath.Join(t.TempDir(), "x"), Limits: changelog.DefaultLimits})
	if !errors.Is(err, changelog.ErrOutsideWindow) {
		t.Fatalf("a time after the newest durable change: %v", err)
	}
}

func hasKey(kvs []*mvccpb.KeyValue, key string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}
