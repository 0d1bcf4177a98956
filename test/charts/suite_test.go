// Package charts checks the rendered charts against a real API server: every
// object is accepted by server-side dry-run with the real cert-manager CRDs
// and the project's CRDs installed, and the driver's chart RBAC is enough
// for the manager to run.
package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Upstream modules whose CRDs the dry-run installs: cert-manager ships them
// in deploy/crds; the Prometheus operator's PrometheusRule CRD is one file of
// example/prometheus-operator-crd (only that one is installed: the others
// are large and unused).
const (
	certManagerModule  = "github.com/cert-manager/cert-manager@v1.21.2"
	promOperatorModule = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
)

var env *testenv.Env

// s3srv is the S3 server snapshots go to; s3c is a client of it.
var (
	s3srv   *s3server.Server
	s3c     *minio.Client
	s3Creds = s3server.Credentials{AccessKeyID: "charts-test", SecretAccessKey: "charts-test-secret"}
)

// moduleDir returns a module's folder in the module cache, downloading it
// through the Go proxy when needed.
func moduleDir(module string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", module, mod.Error)
	}
	return mod.Dir, nil
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	certManager, err := moduleDir(certManagerModule)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	promOperator, err := moduleDir(promOperatorModule)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "charts-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if s3srv, err = s3server.Start(dir, s3Creds, "etcd-backups"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s3c, err = testenv.S3Client(s3srv.URL, s3Creds.AccessKeyID, s3Creds.SecretAccessKey); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(
		filepath.Join(certManager, "deploy", "crds"),
		filepath.Join(promOperator, "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml"),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
		}
	}()
	return m.Run()
}
