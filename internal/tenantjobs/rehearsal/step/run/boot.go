package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/keywalk"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// The throwaway member's identity: fixed, loopback only, never a peer of
// anything.
const (
	memberName   = "rehearsal"
	clusterToken = "etcd-backup-driver-rehearsal"
)

// Bounds of the boot and the read-back.
const (
	bootTimeout = 2 * time.Minute
	stopTimeout = 30 * time.Second
)

var (
	// errBoot: the restored member did not start.
	errBoot = errors.New("the restored etcd did not start")
	// errMismatch: it started but does not answer as staged.
	errMismatch = errors.New("the restored etcd does not read back as staged")
)

// member is where the restored data lives and where it listens.
type member struct {
	dir          string
	client, peer url.URL
}

// restoreDataDir restores the staged snapshot (its trailer checked, as
// etcdutl does without --skip-hash-check) into data, for a single member
// listening on loopback ports picked now.
func restoreDataDir(staged, data string) (m member, err error) {
	// etcdutl panics on some malformed databases.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("etcdutl snapshot restore failed: %v", p)
		}
	}()
	c, err := loopbackURL()
	if err != nil {
		return member{}, err
	}
	p, err := loopbackURL()
	if err != nil {
		return member{}, err
	}
	m = member{dir: data, client: c, peer: p}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        staged,
		Name:                memberName,
		OutputDataDir:       data,
		PeerURLs:            []string{p.String()},
		InitialCluster:      memberName + "=" + p.String(),
		InitialClusterToken: clusterToken,
	})
	if err != nil {
		return member{}, fmt.Errorf("etcdutl snapshot restore of the staged snapshot: %w", err)
	}
	return m, nil
}

// loopbackURL is http://127.0.0.1:<a free port>.
func loopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("pick a loopback port: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// readBack is what the booted member answered.
type readBack struct {
	revision, compacted, keys int64
	counter                   *manifest.Counter
}

// bootAndRead starts the member in-process, checks it answers at the
// staged revision with everything below compacted, walks every key
// (keywalk.Walk) into a Counter, and stops it.
func bootAndRead(ctx context.Context, m member, staged stagingstep.Result) (readBack, error) {
	cfg := embed.NewConfig()
	cfg.Name = memberName
	cfg.Dir = m.dir
	cfg.WalDir = filepath.Join(m.dir, "member", "wal")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.client}, []url.URL{m.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = memberName + "=" + m.peer.String()
	cfg.InitialClusterToken = clusterToken
	// Boot failures come back through StartEtcd and Err; the member's own
	// log (its shutdown included) is noise in the Job's output.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// A throwaway member: losing it on a crash loses nothing.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return readBack{}, fmt.Errorf("%w: %w", errBoot, err)
	}
	defer func() {
		stopped := make(chan struct{})
		go func() { e.Close(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(stopTimeout):
		}
	}()
	timer := time.NewTimer(bootTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return readBack{}, fmt.Errorf("%w: %w", errBoot, err)
	case <-timer.C:
		return readBack{}, fmt.Errorf("%w within %s", errBoot, bootTimeout)
	case <-ctx.Done():
		return readBack{}, ctx.Err()
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return readBack{}, fmt.Errorf("connect to the restored etcd: %w", err)
	}
	defer cli.Close()
	return read(ctx, cli, staged)
}

// read checks the revision and the compaction and counts every key.
func read(ctx context.Context, cli *clientv3.Client, staged stagingstep.Result) (readBack, error) {
	head, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return readBack{}, fmt.Errorf("read the restored etcd's revision: %w", err)
	}
	rev := head.Header.Revision
	if rev != staged.Revision {
		return readBack{}, fmt.Errorf("%w: it answers at revision %d, the staged snapshot is at %d", errMismatch, rev, staged.Revision)
	}
	below := staged.CompactedRevision - 1
	if below > 0 {
		_, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(below))
		if !errors.Is(err, rpctypes.ErrCompacted) {
			return readBack{}, fmt.Errorf("%w: a read at revision %d (below the staged compaction at %d) answered %v, not ErrCompacted",
				errMismatch, below, staged.CompactedRevision, err)
		}
	}
	c := manifest.NewCounter()
	if _, err := keywalk.Walk(ctx, cli, rev, c.Add); err != nil {
		return readBack{}, fmt.Errorf("walk the restored etcd's keys: %w", err)
	}
	if c.Keys() != head.Count {
		return readBack{}, fmt.Errorf("%w: the walk counted %d keys, the count query %d", errMismatch, c.Keys(), head.Count)
	}
	return readBack{revision: rev, compacted: staged.CompactedRevision, keys: c.Keys(), counter: c}, nil
}
