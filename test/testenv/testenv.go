// Package testenv starts a real kube-apiserver and etcd (built from source
// into bin/ by `make envtest-bins`) with every CRD of config/ installed, for
// tests that must run against the API server's own validation and watches.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// Env is a running API server with the project's CRDs.
type Env struct {
	// Config reaches the API server as an admin.
	Config *rest.Config
	// Client is an uncached client with the driver's scheme.
	Client client.Client

	env *envtest.Environment
}

// RepoRoot returns the repository's top folder (where go.mod is).
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot locate source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CRDPaths are the folders whose CRDs every test environment installs: ours
// and the test mirrors of the external kinds.
func CRDPaths() []string {
	root := RepoRoot()
	return []string{
		filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(root, "config", "crd", "external"),
	}
}

// Start boots kube-apiserver and etcd from bin/ and installs the CRDs. Extra
// CRD folders (for example cert-manager's) may be added.
func Start(extraCRDPaths ...string) (*Env, error) {
	bin := filepath.Join(RepoRoot(), "bin")
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("testenv: %s is missing from %s; run `make envtest-bins` (or `make test`, which builds it): %w", name, bin, err)
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     append(CRDPaths(), extraCRDPaths...),
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("testenv: start API server: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: driverscheme.New()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("testenv: client: %w", err), env.Stop())
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DriverNamespace}}
	if err := c.Create(context.Background(), ns); err != nil {
		return nil, errors.Join(fmt.Errorf("testenv: create the driver's namespace: %w", err), env.Stop())
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// DriverNamespace is the driver's own namespace every Env has (the
// manager's default), for its claims, captures and provenance key.
const DriverNamespace = "etcd-backup-driver"

// LoopbackCIDRs lets the driver's endpoint policy reach S3 servers that
// tests run on loopback.
var LoopbackCIDRs = []string{"127.0.0.0/8"}

// Stop ends the API server and etcd.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// Run is a TestMain body: it starts an Env, hands it to setup, runs the
// package's tests, stops the Env and returns the exit code.
//
// Controller logs are discarded unless TEST_LOGS=1.
func Run(m interface{ Run() int }, setup func(*Env)) int {
	logs := io.Discard
	if os.Getenv("TEST_LOGS") == "1" {
		logs = os.Stderr
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	env, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	setup(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop:", err)
	}
	return code
}
