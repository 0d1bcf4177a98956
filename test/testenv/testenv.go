// Package testenv starts a real kube-apiserver and etcd (built from source
// into bin/ by `make envtest-bins`) with the CRDs a real cluster would serve
// installed: this project's own (config/crd/bases), Cozystack's Etcd
// strategy, the etcd-operator's, Flux's and Kamaji's exactly as those
// projects publish them (config/crd/upstream), and a small test CRD for a
// kind nobody publishes (config/crd/external). On
// request it also runs the real kube-controller-manager (garbage collector,
// Job controller, PVC protection) for tests that depend on ownership and Job
// semantics; see Options.ControllerManager.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// Env is a running API server with the CRDs installed.
type Env struct {
	// Config reaches the API server as an admin.
	Config *rest.Config
	// Client is an uncached client with the driver's scheme.
	Client client.Client

	env         *envtest.Environment
	kcm         *ControllerManager
	controllers []string
}

// Options say what Start runs besides the API server. The zero value runs
// the API server and etcd only.
type Options struct {
	// ExtraCRDPaths are installed with the default CRDs (CRDPaths); files
	// and folders are both accepted.
	ExtraCRDPaths []string
	// ControllerManager runs bin/kube-controller-manager with
	// DefaultControllers once the CRDs are installed, so that owner
	// references are garbage-collected, Jobs get Pods and deadlines, and
	// PVCs lose their protection finalizer when deleted.
	ControllerManager bool
	// Controllers are the kube-controller-manager's controllers;
	// empty means DefaultControllers.
	Controllers []string
	// WithoutKamaji leaves Kamaji's CRDs out: a platform without Kamaji.
	// (Deleting them after the install instead raced the API server: a
	// CRD deleted while its storage still initialises fails its cleanup,
	// which then backs off for minutes on a loaded machine.)
	WithoutKamaji bool
}

// RepoRoot returns the repository's top folder (where go.mod is).
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot locate source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CRDPaths are the folders and files whose CRDs every test environment
// installs: this project's CRDs, Cozystack's own CRDs of the kinds whose
// Go types mirror them exactly (CozystackCRDs), the etcd-operator's, Flux's
// and Kamaji's upstream CRDs, and the small test CRD of the Cozystack Etcd
// application.
func CRDPaths() []string {
	root := RepoRoot()
	paths := []string{filepath.Join(root, "config", "crd", "bases")}
	for _, f := range CozystackCRDs {
		paths = append(paths, filepath.Join(CozystackCRDPath(), f))
	}
	return append(paths,
		filepath.Join(root, "config", "crd", "external"),
		filepath.Join(root, "config", "crd", "upstream", "etcd-operator"),
		filepath.Join(root, "config", "crd", "upstream", "flux"),
		KamajiCRDPath(),
	)
}

// KamajiCRDPath is the folder of Kamaji's upstream CRDs.
func KamajiCRDPath() string { return filepath.Join(RepoRoot(), "config", "crd", "upstream", "kamaji") }

// CozystackCRDs are the files of CozystackCRDPath every Env installs (the
// Makefile's COZYSTACK_CRDS: config/crd/bases no longer has them).
var CozystackCRDs = []string{
	"backups.cozystack.io_backupclasses.yaml", "backups.cozystack.io_backupjobs.yaml", "backups.cozystack.io_backups.yaml",
	"backups.cozystack.io_plans.yaml", "backups.cozystack.io_restorejobs.yaml", "strategy.backups.cozystack.io_etcds.yaml",
}

// CozystackCRDPath is the folder of Cozystack's own backups.cozystack.io and
// strategy.backups.cozystack.io CRDs, as Cozystack installs them: every
// suite installs all of them (CozystackCRDs), as pinned.
func CozystackCRDPath() string {
	return filepath.Join(RepoRoot(), "config", "crd", "upstream", "cozystack")
}

// binDir is where `make envtest-bins` puts the binaries.
func binDir() string { return filepath.Join(RepoRoot(), "bin") }

func requireBinaries(names ...string) error {
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(binDir(), name)); err != nil {
			return fmt.Errorf("testenv: %s is missing from %s; run `make tools` (or `make test`, which builds it): %w", name, binDir(), err)
		}
	}
	return nil
}

// Start boots kube-apiserver and etcd from bin/ and installs the CRDs.
// Extra CRD folders or files (for example cert-manager's) may be added.
func Start(extraCRDPaths ...string) (*Env, error) {
	return StartWith(Options{ExtraCRDPaths: extraCRDPaths})
}

// EtcdURL is the client URL of the API server's etcd, for tests that read
// what the API server stored (a snapshot of it, its keys).
func (e *Env) EtcdURL() string { return e.env.ControlPlane.Etcd.URL.String() }

// StartWith boots an Env as o says.
func StartWith(o Options) (*Env, error) {
	if err := requireBinaries("kube-apiserver", "etcd"); err != nil {
		return nil, err
	}
	paths := CRDPaths()
	if o.WithoutKamaji {
		paths = slices.DeleteFunc(paths, func(p string) bool { return p == KamajiCRDPath() })
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     append(paths, o.ExtraCRDPaths...),
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: binDir(),
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
	e := &Env{Config: cfg, Client: c, env: env, controllers: o.Controllers}
	if o.ControllerManager {
		if err := e.StartControllerManager(); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	return e, nil
}

// DriverNamespace is the driver's own namespace every Env has (the
// manager's default), for its claims, captures and provenance key.
const DriverNamespace = "etcd-backup-driver"

// LoopbackCIDRs lets the driver's endpoint policy reach S3 servers that
// tests run on loopback.
var LoopbackCIDRs = []string{"127.0.0.0/8"}

// StartControllerManager runs the real kube-controller-manager against this
// Env with its Options.Controllers (DefaultControllers when none), and waits until its garbage collector
// collects; Stop ends it. Call it after every CRD whose objects must be
// garbage-collected is installed: the collector discovers resources when it
// starts (and again only every 30 seconds).
func (e *Env) StartControllerManager() error {
	if e.kcm != nil {
		return nil
	}
	kcm, err := StartControllerManager(e.Config, e.controllers...)
	if err != nil {
		return err
	}
	e.kcm = kcm
	return nil
}

// Stop ends the controller manager (if any), the API server and etcd.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil {
		errs = append(errs, e.kcm.Stop())
		e.kcm = nil
	}
	return errors.Join(append(errs, e.env.Stop())...)
}

// Run is a TestMain body: it starts an Env, hands it to setup, runs the
// package's tests, stops the Env and returns the exit code.
//
// Controller logs are discarded unless TEST_LOGS=1.
func Run(m interface{ Run() int }, setup func(*Env)) int {
	return RunWith(m, Options{}, setup)
}

// RunWith is Run with Options (for example ControllerManager: true).
func RunWith(m interface{ Run() int }, o Options, setup func(*Env)) int {
	SetupLogs()
	env, err := StartWith(o)
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

// SetupLogs points controller-runtime's logger at stderr when TEST_LOGS=1
// and discards its output otherwise.
func SetupLogs() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(LogWriter()), zap.UseDevMode(true)))
}

// LogWriter is where test helpers send process and controller logs: stderr
// when TEST_LOGS=1, nowhere otherwise.
func LogWriter() io.Writer {
	if os.Getenv("TEST_LOGS") == "1" {
		return os.Stderr
	}
	return io.Discard
}

// Drain returns the Events a fake recorder holds (its Events channel),
// emptying it, without waiting for more.
func Drain(events chan string) []string {
	var out []string
	for {
		select {
		case e := <-events:
			out = append(out, e)
		default:
			return out
		}
	}
}
