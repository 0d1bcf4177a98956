package sharedcreds_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// env is the real API server; metricsURL the driver's /metrics; kubeconfig
// reaches the API server as an admin (for the kubectl plugin).
var (
	env        *testenv.Env
	metricsURL string
	kubeconfig string
	logs       = &lockedBuffer{}
)

// resync is the driver's resync interval here: short, so that a changed
// Secret or a deleted namespace shows within seconds.
const resync = 2 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Every line the driver logs is kept, to check no key is in it (set
	// before anything else: controller-runtime takes the first logger).
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(io.MultiWriter(logs, testenv.LogWriter()))))
	dir, err := os.MkdirTemp("", "sharedcreds-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: stop:", err)
		}
	}()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		panic(err)
	}
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = freeAddr(), "0"
	o.Namespace = testenv.DriverNamespace
	o.SkipControllerNameValidation = true
	o.AllowedEndpointCIDRs = testenv.LoopbackCIDRs
	o.SharedCredentialsResync = resync
	metricsURL = "http://" + o.MetricsAddr + "/metrics"
	mgr, err := manager.New(env.Config, o)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
