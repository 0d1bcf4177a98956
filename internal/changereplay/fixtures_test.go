package changereplay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	capturestep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var s3creds = s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}

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
	path := filepath.Join(t.TempDir(), "base.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return path, changelog.Base{Revision: st.Header.Revision, SHA256: hex.EncodeToString(sum[:])}
}

// capturing runs the real capture step against the etcd into a chain of
// an S3 server; stop ends it as SIGTERM does, once the chain holds
// revision upTo.
type capturing struct {
	o      capture.Options
	store  changelog.Store
	cancel context.CancelFunc
	done   chan int
}

func startCapture(t testing.TB, etcdURL string, b changelog.Base) *capturing {
	t.Helper()
	srv, err := s3server.Start(t.TempDir(), s3creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	o := capture.Options{EtcdEndpoints: []string{etcdURL}, Endpoint: srv.URL, Bucket: "bkt", PathStyle: true,
		AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true, Prefix: "tenant-a/etcd", Base: b,
		SegmentInterval: time.Second, SegmentBytes: capture.MinSegmentBytes, TerminationLog: filepath.Join(t.TempDir(), "log")}
	policy, err := endpointpolicy.Parse(o.AllowedEndpointCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	c := &capturing{o: o, done: make(chan int, 1), store: changelog.Store{
		S3: s3object.Store{Policy: policy, AllowHTTP: true}, Creds: s3object.Credentials{AccessKeyID: s3creds.AccessKeyID, SecretAccessKey: s3creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: srv.URL, Bucket: "bkt", ForcePathStyle: true},
		Chain:  changelog.ChainPrefix(o.Prefix, b.Revision), Limits: changelog.DefaultLimits}}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	env := func(k string) string {
		return map[string]string{s3object.AccessKeyIDKey: s3creds.AccessKeyID, s3object.SecretAccessKeyKey: s3creds.SecretAccessKey}[k]
	}
	go func() { c.done <- capturestep.Main(ctx, o.Args(), env, io.Discard, io.Discard) }()
	t.Cleanup(func() { cancel(); <-c.done; c.done <- 0 })
	return c
}

// stopAt waits until the chain holds revision rev, stops the capture and
// fetches the whole chain into a folder.
func (c *capturing) stopAt(ctx context.Context, t testing.TB, rev int64) (changelog.Index, []changelog.Stored) {
	t.Helper()
	for {
		idx, err := c.store.ReadIndex(ctx)
		if err == nil && idx.Newest.Revision >= rev {
			break
		}
		if err != nil && !errors.Is(err, changelog.ErrNoIndex) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("revision %d never became durable", rev)
		case code := <-c.done:
			c.done <- code
			t.Fatalf("the capture ended (exit %d) before revision %d was durable", code, rev)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.cancel()
	if code := <-c.done; code != capture.ExitStopped {
		t.Fatalf("the capture exited %d", code)
	}
	c.done <- 0
	idx, err := c.store.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := c.store.Fetch(ctx, idx, func(changelog.Header) bool { return true }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]changelog.Stored, len(chain.Segments))
	for i, s := range chain.Segments {
		stored[i] = s.Stored
	}
	return idx, stored
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
