// Package brokered runs the product end to end on the sandbox in brokered
// mode: a real MinIO server (bin/minio, `make tools`; missing, the suite
// fails) instead of the embedded S3 server, and a strategy that keeps the
// platform key in the driver's namespace and brokers each tenant namespace
// a key limited to its prefix. Real etcd members, real snapshot Jobs and
// restores move the data with the tenant's key.
package brokered

import (
	"os"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
)

var sb *sandbox.Sandbox

func TestMain(m *testing.M) {
	os.Exit(sandbox.RunSuite(m, "e2e/brokered", sandbox.Options{S3Server: sandbox.S3MinIO}, func(s *sandbox.Sandbox) error {
		sb = s
		return nil
	}))
}
