// Package etcdproc runs etcd members as child processes of the sandbox, on
// loopback ports, each in its own process group so that stopping a member
// (or the sandbox dying) never leaves an etcd behind.
package etcdproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Spec is how to start one member.
type Spec struct {
	// Binary is the etcd executable.
	Binary string
	// Name of the member, unique in its cluster.
	Name string
	// DataDir holds the member's data; it may already contain a restored
	// member/ folder.
	DataDir string
	// ClientURL and PeerURL are the member's loopback URLs (see FreeURL).
	ClientURL, PeerURL string
	// InitialCluster is name=peerURL,... of the members known at start.
	InitialCluster string
	// Existing joins a running cluster (after MemberAdd) instead of
	// founding one.
	Existing bool
	// Token is the initial cluster token.
	Token string
	// LogFile receives the member's output.
	LogFile string
	// Flags are extra etcd flags (the operator's spec.options).
	Flags []string
}

// Member is one running etcd process.
type Member struct {
	Spec Spec

	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	mu      sync.Mutex
	err     error
}

// FreeURL returns http://127.0.0.1:<port> for a port free right now.
func FreeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// Start launches the member and returns once the process runs (not once it
// serves; see WaitHealthy).
func Start(s Spec) (*Member, error) {
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("member %s: data dir: %w", s.Name, err)
	}
	state := "new"
	if s.Existing {
		state = "existing"
	}
	args := []string{
		"--name=" + s.Name,
		"--data-dir=" + s.DataDir,
		"--listen-client-urls=" + s.ClientURL,
		"--advertise-client-urls=" + s.ClientURL,
		"--listen-peer-urls=" + s.PeerURL,
		"--initial-advertise-peer-urls=" + s.PeerURL,
		"--initial-cluster=" + s.InitialCluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + s.Token,
		"--listen-metrics-urls=",
		"--log-level=warn",
	}
	cmd := exec.Command(s.Binary, append(args, s.Flags...)...)
	// Own process group: Stop signals the whole group. Pdeathsig: if the
	// sandbox itself is killed, the kernel kills its members too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(s.LogFile), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("member %s: log file: %w", s.Name, err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		defer f.Close() // the child holds its own descriptor
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("member %s: start %s: %w", s.Name, s.Binary, err)
	}
	m := &Member{Spec: s, cmd: cmd, started: time.Now(), exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(m.exited)
	}()
	return m, nil
}

// Started is when the process was launched.
func (m *Member) Started() time.Time { return m.started }

// Pid is the process's ID.
func (m *Member) Pid() int { return m.cmd.Process.Pid }

// Exited is closed when the process has ended.
func (m *Member) Exited() <-chan struct{} { return m.exited }

// Running reports whether the process is still alive.
func (m *Member) Running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Stop ends the member's process group: SIGTERM, then SIGKILL after grace.
func (m *Member) Stop(grace time.Duration) {
	if !m.Running() {
		return
	}
	pgid := m.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-m.exited
	}
}

// Client opens an etcd client to the given endpoints with quiet logging.
func Client(endpoints ...string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}

// WaitHealthy waits until the member answers a Status call, its process
// exits, or ctx ends. It first waits for the client port to accept
// connections: a gRPC dial to a port nobody listens on yet backs off for a
// second, which would make every member start a second slower than it is.
func (m *Member) WaitHealthy(ctx context.Context) error {
	addr := strings.TrimPrefix(m.Spec.ClientURL, "http://")
	var last error
	for {
		if last = dialOnce(ctx, addr); last == nil {
			if _, last = m.Status(ctx); last == nil {
				return nil
			}
		}
		select {
		case <-m.exited:
			return fmt.Errorf("member %s exited before serving (see %s)", m.Spec.Name, m.Spec.LogFile)
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("member %s did not become healthy: %w", m.Spec.Name, ctx.Err()), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func dialOnce(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 100 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Status asks the member for its status (ID, role, leader, database size).
func (m *Member) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	c, err := Client(m.Spec.ClientURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return c.Status(sctx, m.Spec.ClientURL)
}
