// Package image runs the product from the driver's image, as a cluster
// would: the sandbox in container mode (sandbox.Options.Image) runs the
// manager from the image `make image` built, with podman, as the chart's
// Deployment runs it, and the restore's staging Pod from the same image
// with its security context and its claim bind-mounted. `make test` builds
// the image first. Without podman, or without the image, the suite fails,
// saying what to install or build; it is never skipped.
package image

import (
	"os"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
)

var sb *sandbox.Sandbox

func TestMain(m *testing.M) {
	os.Exit(sandbox.RunSuite(m, "e2e/image", sandbox.Options{Image: true}, func(s *sandbox.Sandbox) error {
		sb = s
		return nil
	}))
}
