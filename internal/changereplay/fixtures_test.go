package changereplay

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

func bin(name string) string { return filepath.Join(testenv.RepoRoot(), "bin", name) }

// startEtcd runs a real etcd (bin/etcd) on dataDir (which may hold a
// restored member) and returns it with a client.
func startEtcd(ctx context.Context, t testing.TB, dataDir, peer string) (*etcdproc.Member, *clientv3.Client) {
	t.Helper()
	m := launch(t, dataDir, peer)
	if err := m.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	cli, err := etcdproc.Client(m.Spec.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return m, cli
}

// launch starts bin/etcd on dataDir without waiting for it.
func launch(t testing.TB, dataDir, peer string) *etcdproc.Member {
	t.Helper()
	if peer == "" {
		var err error
		if peer, err = etcdproc.FreeURL(); err != nil {
			t.Fatal(err)
		}
	}
	url, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	m, err := etcdproc.Start(etcdproc.Spec{Binary: bin("etcd"), Name: "etcd-0", DataDir: dataDir, ClientURL: url, PeerURL: peer,
		InitialCluster: "etcd-0=" + peer, Token: "t" + strconv.FormatInt(time.Now().UnixNano(), 36), LogFile: dataDir + ".log"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(10 * time.Second) })
	return m
}

// restoreAsOperator restores a snapshot file as the etcd-operator's init
// container does (bin/etcdutl snapshot restore, no revision bump) and
// boots bin/etcd on it.
func restoreAsOperator(ctx context.Context, t testing.TB, file string) *clientv3.Client {
	t.Helper()
	dir, peer := etcdutlRestore(ctx, t, file)
	_, cli := startEtcd(ctx, t, dir, peer)
	return cli
}

// etcdutlRestore restores file with bin/etcdutl into a new data
// directory for a member at the peer URL it returns.
func etcdutlRestore(ctx context.Context, t testing.TB, file string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restored")
	peer, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin("etcdutl"), "snapshot", "restore", file, "--data-dir", dir, "--name", "etcd-0",
		"--initial-cluster", "etcd-0="+peer, "--initial-advertise-peer-urls", peer).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	return dir, peer
}

// takeBase snapshots the etcd as a base Backup: the file, and its
// revision and sha256.
func takeBase(ctx context.Context, t testing.TB, cli *clientv3.Client) (string, changelog.Base) {
	t.Helper()
	b, base := pointchain.Snapshot(ctx, t, cli)
	path := filepath.Join(t.TempDir(), "base.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, base
}

// revisionOf is the etcd's current revision.
func revisionOf(ctx context.Context, t testing.TB, cli *clientv3.Client) int64 {
	t.Helper()
	r, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}
