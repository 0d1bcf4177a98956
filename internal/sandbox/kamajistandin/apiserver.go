package kamajistandin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// apiServerStartTimeout bounds one start of a tenant kube-apiserver; on two
// busy cores a cold start takes ten to twenty seconds.
const apiServerStartTimeout = 90 * time.Second

// apiServer is one tenant control plane's kube-apiserver process. Its port
// and certificates are chosen once, so a restart serves at the same
// address to the same clients, as a Kamaji control plane's Service does.
type apiServer struct {
	binary  string
	dir     string
	port    int
	etcdURL string
	prefix  string
	// admin reaches the apiserver as a member of system:masters.
	admin *rest.Config

	cmd    *exec.Cmd
	exited chan struct{}
}

// newAPIServer writes the certificates and keys into dir.
func newAPIServer(ca *authority, binary, dir, etcdURL, prefix string) (*apiServer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, err := ca.serving("kube-apiserver")
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := ca.client("kamaji-stand-in-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	saKey, err := newKeyPEM()
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.PEM, "apiserver.crt": servingCert, "apiserver.key": servingKey, "sa.key": saKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	s := &apiServer{binary: binary, dir: dir, port: port, etcdURL: etcdURL, prefix: prefix}
	s.admin = &rest.Config{
		Host:            s.URL(),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.PEM, CertData: adminCert, KeyData: adminKey},
		QPS:             200,
		Burst:           400,
	}
	return s, nil
}

// URL is where the apiserver serves.
func (s *apiServer) URL() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

// args are the flags of a lean kube-apiserver: client-certificate
// authentication, RBAC, its own service-account keys, the watch cache on
// (the default), the tenant's keys under prefix.
func (s *apiServer) args() []string {
	file := func(n string) string { return filepath.Join(s.dir, n) }
	return []string{
		"--etcd-servers=" + s.etcdURL,
		"--etcd-prefix=" + s.prefix,
		"--bind-address=127.0.0.1",
		// No kubernetes Service endpoints: it would refuse a loopback
		// address, and nothing in the tenant dials the Service.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + s.dir,
		"--tls-cert-file=" + file("apiserver.crt"),
		"--tls-private-key-file=" + file("apiserver.key"),
		"--client-ca-file=" + file("ca.crt"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + file("sa.key"),
		"--service-account-signing-key-file=" + file("sa.key"),
		// No controller creates default service accounts in the sandbox.
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
	}
}

// start launches the process and returns once /readyz answers 200, or
// the process exited, or the timeout passed (then it is stopped again).
func (s *apiServer) start(ctx context.Context) error {
	logs, err := os.OpenFile(filepath.Join(s.dir, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logs.Close() // the child holds its own descriptor
	cmd := exec.Command(s.binary, s.args()...)
	cmd.Stdout, cmd.Stderr = logs, logs
	// Own process group, and killed by the kernel should the sandbox die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	if err := s.awaitReady(ctx); err != nil {
		s.stop()
		return fmt.Errorf("%w; log %s ends: %s", err, logs.Name(), tail(logs.Name(), 600))
	}
	return nil
}

func (s *apiServer) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiServerStartTimeout)
	defer cancel()
	transport, err := rest.TransportFor(s.admin)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return errors.New("kube-apiserver exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready within %s", apiServerStartTimeout)
		case <-tick.C:
		}
	}
}

// running reports whether the process is up.
func (s *apiServer) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop ends the process: SIGTERM, SIGKILL after ten seconds.
func (s *apiServer) stop() {
	if !s.running() {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n bytes of a file, for error messages.
func tail(file string, n int64) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
