// Package plugin runs ebdctl and the kubectl plugin against the sandbox: a
// real backup followed live in a pseudo-terminal through `kubectl
// etcd-backup`, then list, status, verify (of the real snapshot in the
// embedded S3, and of a tampered one) and an in-place restore followed
// step by step.
package plugin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
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
	logs := io.Discard
	if os.Getenv("TEST_LOGS") == "1" {
		logs = os.Stderr
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
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
	sb, err = sandbox.Start(sandbox.Options{
		Driver: func(o *manager.Options) {
			o.BackupDeadline = 3 * time.Minute
			o.RestoreDeadline = 3 * time.Minute
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin: start sandbox:", err)
		return 1
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "plugin: stop sandbox:", err)
		}
	}()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := sb.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "plugin: kubeconfig:", err)
		return 1
	}
	return m.Run()
}
