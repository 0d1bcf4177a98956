package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// fixture is a real etcd's snapshot as a base file, and a chain of four
// revisions after it in a real S3 bucket: one and two created (segment
// 0), one deleted and three created (segment 1).
type fixture struct {
	store    changelog.Store
	base     string
	point    pointreplay.Point
	segments []pointchain.Segment
	t0       time.Time
}

func newFixture(ctx context.Context, t *testing.T) fixture {
	t.Helper()
	cli, _ := testenv.StartEtcd(t)
	if _, err := cli.Put(ctx, "/registry/namespaces/kept", "k"); err != nil {
		t.Fatal(err)
	}
	snap, b := pointchain.Snapshot(ctx, t, cli)
	base := filepath.Join(t.TempDir(), "base.db")
	if err := os.WriteFile(base, snap, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	policy, err := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	p := pointreplay.Point{Chain: changelog.ChainPrefix("tenant-a/etcd", b.Revision), Base: b}
	store := changelog.Store{S3: s3object.Store{Policy: policy, AllowHTTP: true},
		Creds:  s3object.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: srv.URL, Bucket: "bkt", ForcePathStyle: true}, Chain: p.Chain}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	r := b.Revision
	segs := pointchain.Upload(ctx, t, store, b,
		[]changelog.Revision{pointchain.Put(r+1, t0, "/registry/namespaces/one", "1"), pointchain.Put(r+2, t0.Add(time.Second), "/registry/namespaces/two", "2")},
		[]changelog.Revision{pointchain.Delete(r+3, t0.Add(2*time.Second), "/registry/namespaces/one"), pointchain.Put(r+4, t0.Add(3*time.Second), "/registry/namespaces/three", "3")})
	return fixture{store: store, base: base, point: p, segments: segs, t0: t0}
}

func (f fixture) at(t changelog.Target) pointreplay.Point { p := f.point; p.Target = t; return p }

// The snapshot made is the etcd at the point, by revision or by time:
// what was created by then is there, what came after is not.
func TestReplayMakesTheSnapshotAtThePoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFixture(ctx, t)
	b := f.point.Base.Revision
	for _, tc := range []struct {
		name   string
		target changelog.Target
		rev    int64
		keys   []string
	}{
		{"a revision", changelog.Target{Revision: b + 2}, b + 2, []string{"kept", "one", "two"}},
		{"a time between two revisions", changelog.Target{Time: f.t0.Add(2500 * time.Millisecond)}, b + 3, []string{"kept", "two"}},
		{"the newest revision", changelog.Target{Revision: b + 4}, b + 4, []string{"kept", "three", "two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.db")
			work := t.TempDir()
			res, err := Replay(ctx, f.store, f.at(tc.target), f.base, work, out)
			if err != nil {
				t.Fatal(err)
			}
			kvs, latest := pointchain.Keys(t, out)
			var got []string
			for k := range kvs {
				got = append(got, filepath.Base(k))
			}
			if latest != tc.rev || res.Revision != tc.rev || !sameSet(got, tc.keys) {
				t.Fatalf("replayed to revision %d (result %d) with %v; want %d with %v", latest, res.Revision, got, tc.rev, tc.keys)
			}
			if left, _ := os.ReadDir(work); len(left) != 0 {
				t.Fatalf("the work folder keeps %d entries", len(left))
			}
		})
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// Every way the chain in S3 can be wrong is a refusal naming it, before a
// snapshot is made; the Pod's own disk failing is not.
func TestAChainThatIsWrongIsRefusedWithItsReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		break_ func(f *fixture)
		work   string
		want   report.Reason
	}{
		{"a corrupted segment", func(f *fixture) {
			s := f.segments[1]
			bad := append([]byte(nil), s.Data...)
			bad[len(bad)-2] ^= 1
			pointchain.Replace(ctx, t, f.store, s.Key, bad, pointchain.SHA256(s.Data))
		}, "", pointreplay.ReasonChainChecksum},
		{"two segments swapped", func(f *fixture) {
			s0, s1 := f.segments[0], f.segments[1]
			pointchain.Replace(ctx, t, f.store, s0.Key, s1.Data, pointchain.SHA256(s1.Data))
			pointchain.Replace(ctx, t, f.store, s1.Key, s0.Data, pointchain.SHA256(s0.Data))
		}, "", pointreplay.ReasonChainOutOfOrder},
		{"a segment missing", func(f *fixture) {
			loc := f.store.Bucket
			loc.Key = f.segments[1].Key
			if err := f.store.S3.Delete(ctx, loc, f.store.Creds); err != nil {
				t.Fatal(err)
			}
		}, "", pointreplay.ReasonChainMissing},
		{"no index", func(f *fixture) {
			loc := f.store.Bucket
			loc.Key = changelog.IndexKey(f.point.Chain)
			if err := f.store.S3.Delete(ctx, loc, f.store.Creds); err != nil {
				t.Fatal(err)
			}
		}, "", pointreplay.ReasonChainNoIndex},
		{"a chain of another base", func(f *fixture) {
			f.point.Base.SHA256 = pointchain.SHA256([]byte("another snapshot"))
		}, "", pointreplay.ReasonChainForeign},
		{"another base file", func(f *fixture) {
			if err := os.WriteFile(f.base, []byte("not the base snapshot at all, not at all"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", pointreplay.ReasonChainBaseMismatch},
		{"a point past the window", func(*fixture) {}, "", pointreplay.ReasonPointOutsideWindow},
		{"the work folder cannot be made", func(*fixture) {}, notADir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(ctx, t)
			tc.break_(&f)
			target := changelog.Target{Revision: f.point.Base.Revision + 4}
			if tc.want == pointreplay.ReasonPointOutsideWindow {
				target.Revision++
			}
			work := tc.work
			if work == "" {
				work = t.TempDir()
			}
			out := filepath.Join(t.TempDir(), "out.db")
			_, err := Replay(ctx, f.store, f.at(target), f.base, work, out)
			reason, refused := pointreplay.Refusal(err)
			if err == nil || reason != tc.want || refused != (tc.want != "") {
				t.Fatalf("Replay = %v: reason %q, refused %v; want %q", err, reason, refused, tc.want)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Fatalf("a snapshot was made: %v", serr)
			}
			t.Log(err)
		})
	}
}
