package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// StartEtcd starts a single-member etcd of bin/etcd for t, plain http on
// loopback, with flags added to its command line ("{client}" in one
// stands for the plain client URL), and returns a client of it and its
// client URL. The member and the client go when t ends; a member that
// does not become healthy fails t with its log.
func StartEtcd(t testing.TB, flags ...string) (*clientv3.Client, string) {
	t.Helper()
	dir := t.TempDir()
	peer, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	url, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range flags {
		flags[i] = strings.ReplaceAll(f, "{client}", url)
	}
	m, err := etcdproc.Start(etcdproc.Spec{Binary: filepath.Join(RepoRoot(), "bin", "etcd"), Name: "etcd-0",
		DataDir: filepath.Join(dir, "data"), ClientURL: url, PeerURL: peer, InitialCluster: "etcd-0=" + peer,
		Token: filepath.Base(dir), LogFile: filepath.Join(dir, "etcd.log"), Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(10 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.WaitHealthy(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		t.Fatalf("%v\n%s", err, log)
	}
	cli, err := etcdproc.Client(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli, url
}
