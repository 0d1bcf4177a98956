// Package scratchetcd runs a throwaway single-member etcd in-process, on
// loopback ports, over a data directory restored from a snapshot: what a
// step inside a tenant's Job uses to read or rewrite a snapshot through
// etcd itself. The member has no peers, no TLS and no fsync (losing it
// loses nothing); only the process that started it can reach it.
//
// The rehearsal step (internal/tenantjobs/rehearsal/step/run) boots the
// snapshot it staged with it, and changereplay replays a chain on it.
package scratchetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// The member's identity: fixed, loopback only, never a peer of anything.
const (
	memberName   = "scratch"
	clusterToken = "etcd-backup-driver-scratch"
)

// Bounds of a boot and a stop.
const (
	bootTimeout = 2 * time.Minute
	stopTimeout = 30 * time.Second
)

// ErrBoot: the restored member did not start.
var ErrBoot = errors.New("the restored etcd did not start")

// Member is a data directory restored for one member, and the loopback
// URLs it will listen on.
type Member struct {
	Dir          string
	Client, Peer url.URL
}

// DBPath is the member's bolt database, for edits made while it is not
// running.
func (m Member) DBPath() string { return filepath.Join(m.Dir, "member", "snap", "db") }

// Restore restores the snapshot file (its integrity trailer checked, as
// etcdutl does without --skip-hash-check) into dir, for a member
// listening on loopback ports picked now.
func Restore(snapshotPath, dir string) (m Member, err error) {
	// etcdutl panics on some malformed databases.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("etcdutl snapshot restore failed: %v", p)
		}
	}()
	c, err := loopbackURL()
	if err != nil {
		return Member{}, err
	}
	p, err := loopbackURL()
	if err != nil {
		return Member{}, err
	}
	m = Member{Dir: dir, Client: c, Peer: p}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        snapshotPath,
		Name:                memberName,
		OutputDataDir:       dir,
		PeerURLs:            []string{p.String()},
		InitialCluster:      memberName + "=" + p.String(),
		InitialClusterToken: clusterToken,
	})
	if err != nil {
		return Member{}, fmt.Errorf("etcdutl snapshot restore: %w", err)
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

// Options tune the member beyond etcd's defaults; zero keeps a default.
type Options struct {
	// MaxTxnOps and MaxRequestBytes bound one transaction.
	MaxTxnOps       uint
	MaxRequestBytes uint
	// QuotaBackendBytes is the database's quota.
	QuotaBackendBytes int64
}

// Etcd is a running member.
type Etcd struct {
	e   *embed.Etcd
	url url.URL
}

// Start boots m in-process and waits until it serves; ErrBoot if it
// does not.
func Start(ctx context.Context, m Member, o Options) (*Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = memberName
	cfg.Dir = m.Dir
	cfg.WalDir = filepath.Join(m.Dir, "member", "wal")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.Client}, []url.URL{m.Client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.Peer}, []url.URL{m.Peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = memberName + "=" + m.Peer.String()
	cfg.InitialClusterToken = clusterToken
	// Boot failures come back through StartEtcd and Err; the member's own
	// log (its shutdown included) is noise in the Job's output.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// A throwaway member: losing it on a crash loses nothing.
	cfg.UnsafeNoFsync = true
	if o.MaxTxnOps > 0 {
		cfg.MaxTxnOps = o.MaxTxnOps
	}
	if o.MaxRequestBytes > 0 {
		cfg.MaxRequestBytes = o.MaxRequestBytes
	}
	if o.QuotaBackendBytes > 0 {
		cfg.QuotaBackendBytes = o.QuotaBackendBytes
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBoot, err)
	}
	s := &Etcd{e: e, url: m.Client}
	timer := time.NewTimer(bootTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return s, nil
	case err = <-e.Err():
		err = fmt.Errorf("%w: %w", ErrBoot, err)
	case <-timer.C:
		err = fmt.Errorf("%w within %s", ErrBoot, bootTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.Close()
	return nil, err
}

// Endpoint is the member's client URL.
func (s *Etcd) Endpoint() string { return s.url.String() }

// Client connects to the member; callMax bounds one request and one
// response (0: clientv3's defaults).
func (s *Etcd) Client(callMax int) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 10 * time.Second,
		Logger: zap.NewNop(), MaxCallSendMsgSize: callMax, MaxCallRecvMsgSize: callMax})
	if err != nil {
		return nil, fmt.Errorf("connect to the scratch etcd: %w", err)
	}
	return cli, nil
}

// Close stops the member, waiting at most stopTimeout.
func (s *Etcd) Close() {
	stopped := make(chan struct{})
	go func() { s.e.Close(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(stopTimeout):
	}
}
