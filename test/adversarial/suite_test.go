// Package adversarial attacks the driver as a hostile tenant would: black
// box, through the API server only, with the real driver manager, a real S3
// server and the test kit's etcd-operator. A tenant may create, edit and
// delete BackupJobs, Plans, RestoreJobs, Backups, ConfigMaps, Leases and
// Secrets in its own namespace, and the platform copies one S3 credentials
// Secret into every tenant namespace. Every attack must end safe: a clear
// terminal message or a harmless no-op, no other tenant's object touched,
// no cluster destroyed.
package adversarial

import (
	"fmt"
	"os"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env   *testenv.Env
	plat  *platform.Platform
	s3srv *s3server.Server
	s3c   *minio.Client
	// s3Creds are the platform's S3 keys, copied into every tenant.
	s3Creds = s3server.Credentials{AccessKeyID: "platform-key", SecretAccessKey: "platform-secret-key"}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "adversarial-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if s3srv, err = s3server.Start(dir, s3Creds, platform.Bucket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s3c, err = testenv.S3Client(s3srv.URL, s3Creds.AccessKeyID, s3Creds.SecretAccessKey); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testenv.Run(m, func(e *testenv.Env) {
		env = e
		plat = &platform.Platform{Client: e.Client, S3URL: s3srv.URL, S3: s3c, Creds: s3Creds}
		plat.Start(e.Config, nil)
	})
}
