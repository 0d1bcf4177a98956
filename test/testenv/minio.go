package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// MinIO is a real MinIO server (bin/minio, built by `make tools`) on
// loopback, for tests of what a real S3 server enforces: policies, service
// accounts, denied requests.
type MinIO struct {
	// Endpoint is http://127.0.0.1:<port>.
	Endpoint string
	// RootUser and RootPassword are the server's root credential.
	RootUser, RootPassword string

	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// StartMinIO runs bin/minio on a fresh folder and waits until it serves.
// It fails, never skips, when bin/minio is missing.
func StartMinIO() (*MinIO, error) {
	if err := requireBinaries("minio"); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testenv-minio-")
	if err != nil {
		return nil, err
	}
	port, console, err := freePorts()
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	m := &MinIO{
		Endpoint:     "http://127.0.0.1:" + strconv.Itoa(port),
		RootUser:     "platform-root",
		RootPassword: hex.EncodeToString(secret),
		dir:          dir,
		done:         make(chan struct{}),
	}
	cmd := exec.Command(filepath.Join(binDir(), "minio"), "server", filepath.Join(dir, "data"),
		"--address", "127.0.0.1:"+strconv.Itoa(port), "--console-address", "127.0.0.1:"+strconv.Itoa(console), "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+m.RootUser, "MINIO_ROOT_PASSWORD="+m.RootPassword,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CONFIG_DIR="+filepath.Join(dir, "config"))
	log, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("testenv: start minio: %w", err), os.RemoveAll(dir))
	}
	m.cmd = cmd
	go func() { _ = cmd.Wait(); _ = log.Close(); close(m.done) }()
	if err := m.waitReady(60 * time.Second); err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, "minio.log"))
		return nil, errors.Join(err, fmt.Errorf("minio log:\n%s", out), m.Stop())
	}
	return m, nil
}

func (m *MinIO) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.Endpoint+"/minio/health/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.done:
			return errors.New("testenv: minio exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("testenv: minio not ready after %s", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the server and removes its data.
func (m *MinIO) Stop() error {
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	return os.RemoveAll(m.dir)
}

func freePorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}
