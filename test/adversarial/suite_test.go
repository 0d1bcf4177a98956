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
	"time"

	"github.com/minio/minio-go/v7"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var (
	env   *testenv.Env
	s3srv *s3server.Server
	s3c   *minio.Client
	// s3Creds are the platform's S3 keys, copied into every tenant.
	s3Creds = s3server.Credentials{AccessKeyID: "platform-key", SecretAccessKey: "platform-secret-key"}
)

// bucket is the platform's one bucket; tenants get a prefix each.
const bucket = "cozy-backups"

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
	if s3srv, err = s3server.Start(dir, s3Creds, bucket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s3c, err = testenv.S3Client(s3srv.URL, s3Creds.AccessKeyID, s3Creds.SecretAccessKey); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testenv.Run(m, func(e *testenv.Env) {
		env = e
		createPlatform()
		o := manager.DefaultOptions()
		o.MetricsAddr, o.ProbeAddr = "0", "0"
		o.SkipControllerNameValidation = true
		// Only the S3 server's own address is reachable: 127.0.0.2 and
		// every other loopback address stay denied.
		o.AllowedEndpointCIDRs = []string{"127.0.0.1/32"}
		o.BackupDeadline, o.RestoreDeadline = 2*time.Minute, 2*time.Minute
		mgr, err := manager.New(e.Config, o)
		if err != nil {
			panic(err)
		}
		go func() {
			if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
				panic(err)
			}
		}()
	})
}
