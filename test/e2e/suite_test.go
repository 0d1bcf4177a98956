// Package e2e runs the product end to end on the sandbox: real etcd
// members, real snapshots streamed to the embedded S3 server, the driver's
// real manager. Data is written to and read from the members themselves.
package e2e

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
)

var sb *sandbox.Sandbox

// snapshotJobDeadline replaces the operator's 1800s activeDeadlineSeconds on
// snapshot Jobs, so that a snapshot that cannot start fails within a test.
const snapshotJobDeadline = 20 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logs := io.Discard
	if os.Getenv("TEST_LOGS") == "1" {
		logs = os.Stderr
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	var err error
	sb, err = sandbox.Start(sandbox.Options{
		SnapshotJobDeadline: snapshotJobDeadline,
		Driver: func(o *manager.Options) {
			o.BackupDeadline = 3 * time.Minute
			o.RestoreDeadline = 3 * time.Minute
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start sandbox:", err)
		return 1
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stop sandbox:", err)
		}
	}()
	return m.Run()
}
