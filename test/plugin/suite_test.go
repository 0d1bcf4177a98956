// Package plugin runs ebdctl and the kubectl plugin against the sandbox: a
// real backup followed live in a pseudo-terminal through `kubectl
// etcd-backup`, then list, status, verify (of the real snapshot in the
// embedded S3, and of a tampered one) and an in-place restore followed
// step by step.
package plugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var (
	sb *sandbox.Sandbox
	// binDir holds the freshly built kubectl-etcd_backup.
	binDir string
	// kubeconfig reaches the sandbox as an admin.
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ebdctl-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "kubectl-etcd_backup"), "./cmd/kubectl-etcd_backup")
	build.Dir, build.Stdout, build.Stderr = testenv.RepoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "plugin: build kubectl-etcd_backup:", err)
		return 1
	}
	return sandbox.RunSuite(m, "plugin", sandbox.Options{}, func(s *sandbox.Sandbox) error {
		sb, kubeconfig = s, filepath.Join(dir, "kubeconfig")
		return s.WriteKubeconfig(kubeconfig)
	})
}
