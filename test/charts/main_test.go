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

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// certManagerModule ships the upstream CRDs in deploy/crds.
const certManagerModule = "github.com/cert-manager/cert-manager@v1.21.2"

var env *testenv.Env

// certManagerCRDs returns cert-manager's CRD folder from the module cache,
// downloading the module through the Go proxy when needed.
func certManagerCRDs() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", certManagerModule).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", certManagerModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", certManagerModule, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", certManagerModule, mod.Error)
	}
	return filepath.Join(mod.Dir, "deploy", "crds"), nil
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	crds, err := certManagerCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(crds)
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
