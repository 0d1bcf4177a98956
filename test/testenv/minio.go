package testenv

import (
	"bytes"
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

	"github.com/minio/minio-go/v7"

	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
)

// MinIO is a real MinIO server (bin/minio, built by `make tools`) on
// loopback, for tests of what a real S3 server enforces: policies, service
// accounts, denied requests.
type MinIO struct {
	// Endpoint is https://127.0.0.1:<port> with a CA, else
	// http://127.0.0.1:<port>.
	Endpoint string
	// RootUser and RootPassword are the server's root credential.
	RootUser, RootPassword string
	// CA issued the server's certificate; nil when it speaks plain http.
	CA *s3ca.CA

	cmd           *exec.Cmd
	dir           string
	temp          bool
	port, console int
	done          chan struct{}
}

// MinIOOptions say where a MinIO server keeps its data and which root
// credential it has. The zero value is StartMinIO's.
type MinIOOptions struct {
	// Dir holds the server's data, configuration and log (minio.log); it
	// is kept by Stop. Empty means a fresh temporary folder, removed by
	// Stop.
	Dir string
	// RootUser and RootPassword are the root credential (MinIO wants at
	// least 3 and 8 characters); empty means "platform-root" and a random
	// password. A server restarted on a Dir needs the same credential.
	RootUser, RootPassword string
	// Buckets are created once the server serves.
	Buckets []string
	// CA, when set, makes the server speak https with a certificate CA
	// issued (in <Dir>/certs, MinIO's --certs-dir), as a platform's S3
	// service behind a private CA does; nil means plain http.
	CA *s3ca.CA
}

// StartMinIO runs bin/minio on a fresh folder and waits until it serves.
// It fails, never skips, when bin/minio is missing.
func StartMinIO() (*MinIO, error) { return StartMinIOWith(MinIOOptions{}) }

// StartMinIOWith runs bin/minio as o says and waits until it serves and
// has o.Buckets. It fails, never skips, when bin/minio is missing.
func StartMinIOWith(o MinIOOptions) (*MinIO, error) {
	if err := requireBinaries("minio"); err != nil {
		return nil, err
	}
	dir, temp := o.Dir, o.Dir == ""
	if temp {
		var err error
		if dir, err = os.MkdirTemp("", "testenv-minio-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cleanup := func() error {
		if temp {
			return os.RemoveAll(dir)
		}
		return nil
	}
	port, console, err := freePorts()
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	scheme := "http"
	if o.CA != nil {
		if err := o.CA.WriteMinIOCerts(filepath.Join(dir, "certs")); err != nil {
			return nil, errors.Join(err, cleanup())
		}
		scheme = "https"
	}
	m := &MinIO{
		Endpoint:     scheme + "://127.0.0.1:" + strconv.Itoa(port),
		RootUser:     o.RootUser,
		RootPassword: o.RootPassword,
		CA:           o.CA,
		dir:          dir,
		temp:         temp,
	}
	if m.RootUser == "" {
		m.RootUser = "platform-root"
	}
	if m.RootPassword == "" {
		secret := make([]byte, 16)
		_, _ = rand.Read(secret)
		m.RootPassword = hex.EncodeToString(secret)
	}
	m.port, m.console = port, console
	if err := m.start(); err != nil {
		return nil, errors.Join(err, cleanup())
	}
	if err := m.makeBuckets(o.Buckets); err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	return m, nil
}

// start runs the server on m's folder and ports and waits until it serves.
func (m *MinIO) start() error {
	m.done = make(chan struct{})
	args := []string{"server", filepath.Join(m.dir, "data"),
		"--address", "127.0.0.1:" + strconv.Itoa(m.port), "--console-address", "127.0.0.1:" + strconv.Itoa(m.console), "--quiet"}
	if m.CA != nil {
		args = append(args, "--certs-dir", filepath.Join(m.dir, "certs"))
	}
	cmd := exec.Command(filepath.Join(binDir(), "minio"), args...)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+m.RootUser, "MINIO_ROOT_PASSWORD="+m.RootPassword,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CONFIG_DIR="+filepath.Join(m.dir, "config"))
	log, err := os.OpenFile(filepath.Join(m.dir, "minio.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("testenv: start minio: %w", err)
	}
	m.cmd = cmd
	done := m.done
	go func() { _ = cmd.Wait(); _ = log.Close(); close(done) }()
	if err := m.waitReady(60 * time.Second); err != nil {
		out, _ := os.ReadFile(filepath.Join(m.dir, "minio.log"))
		m.kill()
		return errors.Join(err, fmt.Errorf("minio log:\n%s", out))
	}
	return m.waitIAM(60 * time.Second)
}

// waitIAM waits until the admin API answers: MinIO reports ready before
// its identity store is loaded, and answers admin calls with 503
// XMinioServerNotInitialized until it is.
func (m *MinIO) waitIAM(timeout time.Duration) error {
	root, err := brokerminio.NewAdmin(m.Endpoint, m.RootUser, m.RootPassword, m.HTTPClient())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := root.ListUsers(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: minio admin API not ready after %s: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Restart kills the server and starts it again on the same folder,
// address and credential, as a crash or an upgrade does: what it stored
// (users, service accounts, policies, objects) is read back from disk.
func (m *MinIO) Restart() error {
	m.kill()
	return m.start()
}

func (m *MinIO) kill() {
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// PlatformPolicyFile is the policy the docs give a brokered strategy's
// platform credential on MinIO, for the bucket etcd-backups.
func PlatformPolicyFile() string {
	return filepath.Join(RepoRoot(), "examples", "backups", "etcd", "minio-platform-policy.json")
}

// AddPlatformUser creates the MinIO user name, with a random secret key,
// whose only policy is PlatformPolicyFile's for bucket: the
// least-privilege platform credential the docs recommend instead of root.
func (m *MinIO) AddPlatformUser(name, bucket string) (accessKeyID, secretAccessKey string, err error) {
	doc, err := os.ReadFile(PlatformPolicyFile())
	if err != nil {
		return "", "", err
	}
	doc = bytes.ReplaceAll(doc, []byte("arn:aws:s3:::etcd-backups"), []byte("arn:aws:s3:::"+bucket))
	root, err := brokerminio.NewAdmin(m.Endpoint, m.RootUser, m.RootPassword, m.HTTPClient())
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if secretAccessKey, err = brokerminio.RandomSecret(); err != nil {
		return "", "", err
	}
	if err := root.AddPolicy(ctx, name, doc); err != nil {
		return "", "", fmt.Errorf("testenv: minio platform policy: %w", err)
	}
	if err := root.AddUser(ctx, name, secretAccessKey); err != nil {
		return "", "", fmt.Errorf("testenv: minio platform user: %w", err)
	}
	if err := root.SetUserPolicy(ctx, name, name); err != nil {
		return "", "", fmt.Errorf("testenv: minio platform user's policy: %w", err)
	}
	return name, secretAccessKey, nil
}

// makeBuckets creates the buckets that do not exist yet.
func (m *MinIO) makeBuckets(buckets []string) error {
	if len(buckets) == 0 {
		return nil
	}
	c, err := m.Client(m.RootUser, m.RootPassword)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range buckets {
		if ok, err := c.BucketExists(ctx, b); err != nil {
			return fmt.Errorf("testenv: minio bucket %s: %w", b, err)
		} else if !ok {
			if err := c.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
				return fmt.Errorf("testenv: create minio bucket %s: %w", b, err)
			}
		}
	}
	return nil
}

func (m *MinIO) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.Endpoint+"/minio/health/ready", nil)
		if resp, err := m.HTTPClient().Do(req); err == nil {
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

// HTTPClient reaches the server: trusting its CA (and nothing else) when
// it has one.
func (m *MinIO) HTTPClient() *http.Client {
	if m.CA == nil {
		return http.DefaultClient
	}
	return m.CA.HTTPClient()
}

// CAFile is the PEM file of the server's CA (what the driver's
// --s3-ca-file names); empty when it speaks plain http.
func (m *MinIO) CAFile() string {
	if m.CA == nil {
		return ""
	}
	return filepath.Join(m.dir, "certs", "CAs", "ca.crt")
}

// Client is an S3 client of the server signed with the key accessKey,
// trusting its CA when it has one.
func (m *MinIO) Client(accessKey, secretKey string) (*minio.Client, error) {
	return S3ClientWithCA(m.Endpoint, accessKey, secretKey, m.CA)
}

// Stop ends the server and removes its data when StartMinIOWith made the
// folder.
func (m *MinIO) Stop() error {
	m.kill()
	if !m.temp {
		return nil
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
