// Package e2e runs the product end to end on the sandbox: real etcd
// members, real snapshots streamed to the embedded S3 server, the driver's
// real manager. Data is written to and read from the members themselves.
package e2e

import (
	"os"
	"testing"
	"time"

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
	return sandbox.RunSuite(m, "e2e", sandbox.Options{SnapshotJobDeadline: snapshotJobDeadline}, func(s *sandbox.Sandbox) error {
		sb = s
		return nil
	})
}
