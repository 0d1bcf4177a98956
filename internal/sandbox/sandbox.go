// Package sandbox runs the whole product on one machine with no kubelet: a
// real kube-apiserver and etcd (from bin/, through test/testenv) with the
// upstream CRDs, the real kube-controller-manager (garbage collector, Job
// controller, PVC protection), the driver's own manager
// (internal/manager.New), an embedded S3 server (or, with Options.S3Server
// S3MinIO, a real MinIO server from bin/minio for brokered keys) speaking
// https with a CA of its own (internal/sandbox/s3ca; the driver gets it as
// --s3-ca-file, the etcd-operator stand-in as its S3 roots), and stand-ins for the
// etcd-operator (EtcdMembers, member PVCs, real etcd member processes, real
// snapshot Jobs and restores; see internal/sandbox/operator) and Flux's
// helm-controller (charts/etcd rendered with the Helm SDK), each tenant
// etcd's TLS client Service and the chart's certificates
// (internal/sandbox/etcdservice, reached through EtcdDialer), a kubelet
// for the driver's restore staging Pods and its point-in-time capture
// Pods (with the Deployment and ReplicaSet controllers), which runs
// bin/etcd-stage, and a
// stand-in for Kamaji that runs a real kube-apiserver per
// TenantControlPlane on its tenant etcd (internal/sandbox/kamajistandin). cmd/sandbox,
// `make demo` and test/e2e all start it through Start. In container mode
// (Options.Image, `make demo IMAGE=1`) the driver and the staging Pods run
// from the driver's image with podman instead (internal/sandbox/container).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdservice"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/helmstandin"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kamajistandin"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Options configure a sandbox. The zero value is usable.
type Options struct {
	// Dir holds S3 data, etcd member data and logs. Empty means a fresh
	// temporary folder, removed by Stop.
	Dir string
	// S3 are the credentials the embedded S3 server accepts, or MinIO's
	// root credential (the platform's admin key); empty means
	// DefaultS3Credentials.
	S3 s3server.Credentials
	// S3Server picks the S3 server; empty means S3Embedded.
	S3Server S3Server
	// Buckets created at start; empty means DefaultBucket.
	Buckets []string
	// SnapshotJobDeadline is the stand-in operator's activeDeadlineSeconds
	// on snapshot Jobs (default 1800s, the operator's): how long a snapshot
	// whose Pod cannot start (no credentials Secret) hangs before it fails.
	SnapshotJobDeadline time.Duration
	// Driver adjusts the driver's manager options (deadlines, ...).
	Driver func(*manager.Options)
	// StageBinary is the local executable the kubelet stand-in runs for
	// the staging image's /etcd-stage; empty means bin/etcd-stage
	// (`make stage-bin`).
	StageBinary string
	// Image is container mode: the driver runs from the image `make
	// image` built (bin/image/image.env), with podman, as the chart's
	// Deployment runs it (DriverPod: read-only root filesystem, user
	// 65532, the chart's arguments), and the kubelet stand-in runs the
	// staging Pods from the same image with their security context and
	// their claims bind-mounted (internal/sandbox/container). Of Driver's
	// adjustments only the deadlines reach it (they are chart values).
	// Start fails, saying what to install or build, without podman or
	// the image.
	Image bool
	// PlainHTTP makes S3 speak plain http, for tests of a StrategyPolicy's
	// allowHTTPEndpoint; by default it speaks https with a CA of its own,
	// as a platform's S3 behind a private CA does.
	PlainHTTP bool
	// NoControlPlanes leaves out the Kamaji stand-in: TenantControlPlanes
	// then get no kube-apiserver. By default every TenantControlPlane a
	// test or script creates (kamajistandin.CreateControlPlane) gets one;
	// none exists unless created, so tenants opt in.
	NoControlPlanes bool
}

// S3Server is the S3 server a sandbox runs.
type S3Server string

// S3 servers.
const (
	// S3Embedded is the embedded, in-process S3 server
	// (internal/sandbox/s3server): fast, one key, no policies.
	S3Embedded S3Server = "embedded"
	// S3MinIO is a real MinIO server (bin/minio, `make tools`) with
	// Options.S3 as its root credential: it enforces policies, so a
	// strategy can broker per-tenant keys (its StrategyPolicy's
	// spec.credentialBroker, provider MinIO) with that credential as the
	// platform's admin key.
	S3MinIO S3Server = "minio"
)

// Sandbox defaults.
const (
	DefaultBucket = "etcd-backups"
	// StagingImage is the driver's staging image in the sandbox; the
	// kubelet stand-in runs StageBinary for its /etcd-stage.
	StagingImage = "sandbox.invalid/etcd-backup-driver:sandbox"
	// StageCommand is the staging image's command.
	StageCommand = "/etcd-stage"
)

// DefaultS3Credentials are the embedded S3 server's well-known sandbox keys.
var DefaultS3Credentials = s3server.Credentials{AccessKeyID: "sandbox-access-key", SecretAccessKey: "sandbox-secret-key"}

// Sandbox is a running sandbox.
type Sandbox struct {
	// Config reaches the API server as an admin.
	Config *rest.Config
	// Client is an uncached client with the driver's scheme.
	Client client.Client
	// S3URL is the S3 endpoint, whichever server runs: https unless
	// Options.PlainHTTP.
	S3URL string
	// S3CA issued S3's certificate; nil with Options.PlainHTTP. S3CAFile
	// holds its PEM: the driver's --s3-ca-file.
	S3CA     *s3ca.CA
	S3CAFile string
	// S3 is the embedded S3 server; nil with S3MinIO.
	S3 *s3server.Server
	// MinIO is the MinIO server; nil unless S3MinIO.
	MinIO *testenv.MinIO
	// S3Credentials are the keys S3 accepts (MinIO's root credential).
	S3Credentials s3server.Credentials
	// PlatformCredentials are the keys a strategy's platform credential
	// holds: S3Credentials on the embedded server; on MinIO a user with
	// the least-privilege policy the docs give a brokered strategy's
	// platform credential (testenv.PlatformPolicyFile), not root.
	PlatformCredentials s3server.Credentials
	// Fleet knows the running etcd members.
	Fleet *operator.Fleet
	// Snapshots reports what the stand-in's snapshot agents moved.
	Snapshots *operator.SnapshotStatsStore
	// Faults injects stand-in operator failures (see operator.Faults).
	Faults *operator.Faults
	// ControlPlanes runs the TenantControlPlanes' kube-apiservers; nil
	// with Options.NoControlPlanes.
	ControlPlanes *kamajistandin.StandIn
	// Dir is the sandbox's data folder.
	Dir string
	// DriverNamespace is the driver's own namespace, where a brokered
	// strategy's admin Secret lives.
	DriverNamespace string
	// Volumes are the folders standing for the claims Pods mount
	// (<Dir>/volumes/<namespace>/<claim>).
	Volumes *operator.Volumes
	// Containers runs the driver's image; nil unless Options.Image.
	Containers *container.Runtime
	// DriverContainer is the driver's container (what `podman run` was
	// given, its name included); nil unless Options.Image.
	DriverContainer *container.Spec
	// DriverLog is the driver container's output; empty unless
	// Options.Image.
	DriverLog string

	env      *testenv.Env
	services *etcdservice.Services
	driver   *driverContainer
	tempDir  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errsMu   sync.Mutex
	errs     []error
}

// Start brings everything up and returns once the managers run. On error
// everything already started is stopped again.
func Start(o Options) (_ *Sandbox, err error) {
	s := &Sandbox{Dir: o.Dir, S3Credentials: o.S3}
	if s.S3Credentials.AccessKeyID == "" {
		s.S3Credentials = DefaultS3Credentials
	}
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "etcd-backup-sandbox-"); err != nil {
			return nil, err
		}
		s.tempDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	buckets := o.Buckets
	if len(buckets) == 0 {
		buckets = []string{DefaultBucket}
	}
	if !o.PlainHTTP {
		if s.S3CA, err = s3ca.New(); err != nil {
			return s, err
		}
		s.S3CAFile = filepath.Join(s.Dir, "s3-ca.crt")
		if err := s.S3CA.WriteCA(s.S3CAFile); err != nil {
			return s, err
		}
	}
	if err := s.startS3(o.S3Server, buckets); err != nil {
		return s, err
	}
	if s.env, err = testenv.StartWith(testenv.Options{ControllerManager: true, Controllers: testenv.WorkloadControllers}); err != nil {
		return s, err
	}
	s.Config, s.Client = s.env.Config, s.env.Client

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel

	driverOpts := manager.DefaultOptions()
	driverOpts.MetricsAddr, driverOpts.ProbeAddr = "0", "0"
	driverOpts.SkipControllerNameValidation = true
	// The S3 server listens on loopback, which the endpoint policy
	// refuses unless allowed.
	driverOpts.AllowedEndpointCIDRs = testenv.LoopbackCIDRs
	driverOpts.S3CAFile = s.S3CAFile
	s.services = etcdservice.New()
	driverOpts.EtcdDialer = s.EtcdDialer()
	if driverOpts.StagingImage == "" {
		driverOpts.StagingImage = StagingImage
	}
	if o.Driver != nil {
		o.Driver(&driverOpts)
	}
	s.DriverNamespace = driverOpts.Namespace
	hosts := filepath.Join(s.Dir, "driver", "hosts")
	if o.Image {
		if s.Containers, err = container.Load(testenv.RepoRoot()); err != nil {
			return s, err
		}
		if err := s.Containers.RemoveOrphans(ctx); err != nil {
			return s, err
		}
		// The driver's container resolves the tenants' client Services
		// through this file, as through cluster DNS.
		if err := os.MkdirAll(filepath.Dir(hosts), 0o755); err != nil {
			return s, err
		}
		if err := s.services.PublishHosts(hosts); err != nil {
			return s, err
		}
		s.DriverNamespace = testenv.DriverNamespace
	}
	if !o.Image {
		hosts = ""
	}
	standIns, err := s.standIns(o, hosts)
	if err != nil {
		return s, err
	}
	managers := map[string]ctrl.Manager{"stand-ins": standIns}
	if !o.Image {
		if managers["driver"], err = manager.New(s.Config, driverOpts); err != nil {
			return s, err
		}
	}
	for name, m := range managers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := m.Start(ctx); err != nil {
				s.errsMu.Lock()
				s.errs = append(s.errs, fmt.Errorf("%s manager: %w", name, err))
				s.errsMu.Unlock()
			}
		}()
	}
	if o.Image {
		if s.driver, err = s.startDriverContainer(s.Containers, driverOpts, hosts); err != nil {
			return s, err
		}
		s.DriverContainer, s.DriverLog = &s.driver.spec, s.driver.log
	}
	return s, nil
}

// standIns builds the manager running the etcd-operator and helm-controller
// stand-ins.
func (s *Sandbox) standIns(o Options, hosts string) (ctrl.Manager, error) {
	skip := true
	scheme := driverscheme.New()
	for _, add := range []func(*runtime.Scheme) error{etcdmember.AddToScheme, kamajiv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("stand-in manager: %w", err)
	}
	api, err := url.Parse(s.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("the API server's address %q: %w", s.Config.Host, err)
	}
	stage := o.StageBinary
	if stage == "" {
		stage = filepath.Join(testenv.RepoRoot(), "bin", "etcd-stage")
	}
	op, err := operator.Setup(mgr, operator.Options{
		EtcdBinary:          filepath.Join(testenv.RepoRoot(), "bin", "etcd"),
		DataDir:             filepath.Join(s.Dir, "etcd"),
		VolumesDir:          filepath.Join(s.Dir, "volumes"),
		PodsDir:             filepath.Join(s.Dir, "pods"),
		Executables:         map[string]string{StageCommand: stage},
		Containers:          s.Containers,
		SnapshotJobDeadline: o.SnapshotJobDeadline,
		S3RootCAs:           s.s3RootCAs(),
		APIServerHost:       api.Hostname(),
		APIServerPort:       api.Port(),
		ResolveService:      s.services.Resolve,
		HostsFile:           hosts,
	})
	if err != nil {
		return nil, err
	}
	s.Fleet, s.Snapshots, s.Faults, s.Volumes = op.Fleet, op.Snapshots, op.Faults, op.Volumes
	if err := s.services.Setup(mgr, op.Fleet.Endpoints); err != nil {
		return nil, err
	}
	helm := &helmstandin.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ChartsDir: filepath.Join(testenv.RepoRoot(), "charts")}
	if err := helm.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if !o.NoControlPlanes {
		if s.ControlPlanes, err = kamajistandin.Setup(mgr, kamajistandin.Options{
			APIServerBinary: filepath.Join(testenv.RepoRoot(), "bin", "kube-apiserver"),
			Dir:             filepath.Join(s.Dir, "controlplanes"),
			Endpoints:       op.Fleet.Endpoints,
		}); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// EtcdDialer dials as the driver would inside the cluster: a tenant
// cluster's client Service, <cluster>-client.<namespace>.svc:2379, reaches
// that cluster's TLS stand-in (see internal/sandbox/etcdservice); other
// addresses are dialled as they are. Start wires it into the driver's
// manager.Options.EtcdDialer.
func (s *Sandbox) EtcdDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if s.services == nil {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		return s.services.Dial(ctx, network, addr)
	}
}

// ControlPlaneConfig reaches the kube-apiserver of the TenantControlPlane
// key as a cluster admin (subject to its write fence). The address and
// credentials survive restarts of the process. It fails until the stand-in
// has started that control plane, and with Options.NoControlPlanes.
func (s *Sandbox) ControlPlaneConfig(key types.NamespacedName) (*rest.Config, error) {
	if s.ControlPlanes == nil {
		return nil, errors.New("sandbox: started with NoControlPlanes")
	}
	return s.ControlPlanes.Config(key)
}

// Stop ends the managers, every tenant kube-apiserver, every etcd member, S3 and the API server, and
// removes a temporary data folder. It is safe on a partly started sandbox.
func (s *Sandbox) Stop() error {
	var driverErr error
	if s.driver != nil {
		driverErr = s.driver.stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	// The tenant apiservers first, so none outlives its etcd.
	if s.ControlPlanes != nil {
		s.ControlPlanes.StopAll()
	}
	if s.services != nil {
		s.services.Close()
	}
	if s.Fleet != nil {
		s.Fleet.StopAll()
	}
	errs := append([]error{driverErr}, s.errs...)
	if s.S3 != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, s.S3.Stop(ctx))
		cancel()
	}
	if s.MinIO != nil {
		errs = append(errs, s.MinIO.Stop())
	}
	if s.env != nil {
		errs = append(errs, s.env.Stop())
	}
	if s.tempDir {
		errs = append(errs, os.RemoveAll(s.Dir))
	}
	return errors.Join(errs...)
}
