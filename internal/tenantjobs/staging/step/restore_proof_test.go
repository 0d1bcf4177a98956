package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// etcdRelease is one etcd whose etcdutl the etcd-operator may restore with.
type etcdRelease struct {
	name          string // row name
	minor         string // "3.5.": what `etcd --version` must say
	etcd, etcdutl string
}

// releases are the etcds make etcd-versions builds into bin/. A missing
// binary fails the test: the Makefile builds them before any test runs.
func releases(t *testing.T) []etcdRelease {
	bin := filepath.Join(testenv.RepoRoot(), "bin")
	rs := []etcdRelease{
		{name: "bin-etcd", etcd: filepath.Join(bin, "etcd"), etcdutl: filepath.Join(bin, "etcdutl")},
		{name: "v3.5", minor: "3.5.", etcd: filepath.Join(bin, "etcd-v3.5", "etcd"), etcdutl: filepath.Join(bin, "etcd-v3.5", "etcdutl")},
		{name: "v3.6", minor: "3.6.", etcd: filepath.Join(bin, "etcd-v3.6", "etcd"), etcdutl: filepath.Join(bin, "etcd-v3.6", "etcdutl")},
	}
	for _, r := range rs {
		for _, b := range []string{r.etcd, r.etcdutl} {
			if _, err := os.Stat(b); err != nil {
				t.Fatalf("%s is missing; run `make etcd-versions`: %v", b, err)
			}
		}
	}
	return rs
}

// The proof the issue asks for: with real etcd processes of every minor,
// the etcd-operator's own `etcdutl snapshot restore --skip-hash-check` of a
// staged snapshot starts above the live revision, answers ErrCompacted
// below it, holds the snapshot's data, and gives new writes revisions no
// client has seen. The same restore of the unstaged snapshot is the
// negative control: its revision goes back and nothing is compacted.
func TestOperatorRestoreOfStagedSnapshotKeepsRevisionAndCompaction(t *testing.T) {
	for _, rel := range releases(t) {
		t.Run(rel.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := exec.Command(rel.etcd, "--version").Output()
			if err != nil {
				t.Fatal(err)
			}
			version := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
			if !strings.Contains(version, "Version: "+rel.minor) {
				t.Fatalf("%s says %q, want %s", rel.etcd, version, rel.minor)
			}
			t.Logf("%s (%s)", version, rel.etcdutl)
			dir := t.TempDir()

			// A live cluster with history: puts, overwrites, deletes.
			src := startEtcd(ctx, t, rel.etcd, filepath.Join(dir, "live"))
			cli := client(t, src)
			for i := range 40 {
				put(ctx, t, cli, fmt.Sprintf("/registry/k%02d", i), fmt.Sprintf("v%d", i))
			}
			for i := range 10 {
				put(ctx, t, cli, fmt.Sprintf("/registry/k%02d", i), fmt.Sprintf("v%d-again", i))
				if _, err := cli.Delete(ctx, fmt.Sprintf("/registry/k%02d", 30+i)); err != nil {
					t.Fatal(err)
				}
			}
			want, rSnap := dump(ctx, t, cli)
			snapshot := filepath.Join(dir, "snapshot.db")
			saveSnapshot(ctx, t, cli, snapshot)
			// The live cluster moves on after the backup.
			var rLive int64
			for i := range 200 {
				rLive = put(ctx, t, cli, fmt.Sprintf("/registry/after%03d", i), "x")
			}
			cli.Close()
			src.Stop(10 * time.Second)
			if rLive <= rSnap {
				t.Fatalf("live revision %d is not above the snapshot's %d", rLive, rSnap)
			}

			// Stage it as the Job would, from the recorded size and sha256.
			b, err := os.ReadFile(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			staged := filepath.Join(dir, "staged", "snapshot.db")
			if err := os.MkdirAll(filepath.Dir(staged), 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(snapshot)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Stage(f, int64(len(b)), hex.EncodeToString(sum[:]), staged, FloorPlan(rLive))
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			target := rLive + DefaultMargin
			if res.SnapshotRevision != rSnap || res.Revision != target || res.CompactedRevision != target {
				t.Fatalf("Result %+v; want snapshot %d, revision and compaction %d", res, rSnap, target)
			}

			t.Run("staged", func(t *testing.T) {
				restored := restoreAsOperator(ctx, t, rel, staged, filepath.Join(dir, "restored-staged"))
				cli := client(t, restored)
				got, rev := dump(ctx, t, cli)
				if rev != target {
					t.Fatalf("restored revision %d, want %d (live was %d)", rev, target, rLive)
				}
				if diff := mapDiff(want, got); diff != "" {
					t.Fatalf("restored data differs from the snapshot's: %s", diff)
				}
				if _, err := cli.Get(ctx, "/registry/k00", clientv3.WithRev(rLive)); !errors.Is(err, rpctypes.ErrCompacted) {
					t.Fatalf("a read at the old live revision %d: %v, want ErrCompacted", rLive, err)
				}
				if _, err := cli.Get(ctx, "/registry/k00", clientv3.WithRev(target-1)); !errors.Is(err, rpctypes.ErrCompacted) {
					t.Fatalf("a read just below the staged revision: %v, want ErrCompacted", err)
				}
				if w := watchFrom(ctx, t, cli, rLive); w.CompactRevision != target || !errors.Is(w.Err(), rpctypes.ErrCompacted) {
					t.Fatalf("a watch from the old live revision: compact revision %d, err %v; want %d, ErrCompacted", w.CompactRevision, w.Err(), target)
				}

				// A restart, once the boot has taken the scheduled
				// compaction over, still starts at the staged revision.
				restored.Stop(10 * time.Second)
				again := startMember(ctx, t, rel.etcd, restored.Spec.DataDir, restored.Spec.PeerURL)
				cli = client(t, again)
				if _, rev := dump(ctx, t, cli); rev != target {
					t.Fatalf("after a restart the revision is %d, want %d", rev, target)
				}
				if _, err := cli.Get(ctx, "/registry/k00", clientv3.WithRev(rLive)); !errors.Is(err, rpctypes.ErrCompacted) {
					t.Fatalf("after a restart, a read at the old live revision %d: %v, want ErrCompacted", rLive, err)
				}
				if rev := put(ctx, t, cli, "/registry/new", "after-restore"); rev <= rLive {
					t.Fatalf("a write after the restore got revision %d, which clients may have seen (live was %d)", rev, rLive)
				}
			})

			t.Run("unstaged negative control", func(t *testing.T) {
				restored := restoreAsOperator(ctx, t, rel, snapshot, filepath.Join(dir, "restored-unstaged"))
				cli := client(t, restored)
				got, rev := dump(ctx, t, cli)
				if rev != rSnap || rev >= rLive {
					t.Fatalf("unstaged restore at revision %d, want the snapshot's %d below the live %d", rev, rSnap, rLive)
				}
				if diff := mapDiff(want, got); diff != "" {
					t.Fatalf("restored data differs from the snapshot's: %s", diff)
				}
				if _, err := cli.Get(ctx, "/registry/k00", clientv3.WithRev(rSnap-1)); err != nil {
					t.Fatalf("a read below the snapshot's revision: %v, want no compaction", err)
				}
				// A watch from the live revision is not compacted: it
				// waits silently for a revision that will be reused.
				wctx, wcancel := context.WithTimeout(ctx, time.Second)
				defer wcancel()
				select {
				case w := <-cli.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(rLive)):
					if w.CompactRevision != 0 || w.Err() != nil {
						t.Fatalf("the unstaged restore answered a watch from %d with compaction %d, %v", rLive, w.CompactRevision, w.Err())
					}
				case <-wctx.Done():
				}
				if rev := put(ctx, t, cli, "/registry/new", "after-restore"); rev > rLive {
					t.Fatalf("a write after the unstaged restore got %d, above the live %d: the control shows nothing", rev, rLive)
				}
			})
		})
	}
}

// restoreAsOperator restores file as the etcd-operator's init container
// does (internal/agent/restore.go, runEtcdutlRestore: no --bump-revision,
// no --mark-compacted) and boots etcd on the result.
func restoreAsOperator(ctx context.Context, t *testing.T, rel etcdRelease, file, dataDir string) *etcdproc.Member {
	t.Helper()
	peer, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, rel.etcdutl, "snapshot", "restore", file,
		"--data-dir", dataDir,
		"--name", "etcd-0",
		"--initial-cluster", "etcd-0="+peer,
		"--initial-cluster-token", "restored",
		"--initial-advertise-peer-urls", peer,
		"--skip-hash-check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return startMember(ctx, t, rel.etcd, dataDir, peer)
}

func startEtcd(ctx context.Context, t *testing.T, bin, dataDir string) *etcdproc.Member {
	peer, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	return startMember(ctx, t, bin, dataDir, peer)
}

func startMember(ctx context.Context, t *testing.T, bin, dataDir, peer string) *etcdproc.Member {
	t.Helper()
	clientURL, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	m, err := etcdproc.Start(etcdproc.Spec{Binary: bin, Name: "etcd-0", DataDir: dataDir, ClientURL: clientURL, PeerURL: peer,
		InitialCluster: "etcd-0=" + peer, Token: "restored", LogFile: dataDir + ".log"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(10 * time.Second) })
	if err := m.WaitHealthy(ctx); err != nil {
		log, _ := os.ReadFile(dataDir + ".log")
		t.Fatalf("%v\n%s", err, log)
	}
	return m
}

func client(t *testing.T, m *etcdproc.Member) *clientv3.Client {
	t.Helper()
	c, err := etcdproc.Client(m.Spec.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(ctx context.Context, t *testing.T, c *clientv3.Client, k, v string) int64 {
	t.Helper()
	r, err := c.Put(ctx, k, v)
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

// dump is every key and value, and the revision it was read at.
func dump(ctx context.Context, t *testing.T, c *clientv3.Client) (map[string]string, int64) {
	t.Helper()
	r, err := c.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, x := range r.Kvs {
		kv[string(x.Key)] = string(x.Value)
	}
	return kv, r.Header.Revision
}

// saveSnapshot streams the Maintenance API's snapshot (the database and
// etcd's sha256 trailer), as the etcd-operator's snapshot agent does.
func saveSnapshot(ctx context.Context, t *testing.T, c *clientv3.Client, path string) {
	t.Helper()
	rc, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
}

func watchFrom(ctx context.Context, t *testing.T, c *clientv3.Client, rev int64) clientv3.WatchResponse {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case w := <-c.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(rev)):
		return w
	case <-wctx.Done():
		t.Fatalf("a watch from revision %d got no answer", rev)
	}
	return clientv3.WatchResponse{}
}

func mapDiff(want, got map[string]string) string {
	var d []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			d = append(d, fmt.Sprintf("%q: want %q, got %q (present %v)", k, v, g, ok))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%q: unexpected %q", k, v))
		}
	}
	return strings.Join(d, "; ")
}
