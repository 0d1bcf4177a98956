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

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env  *testenv.Env
	plat *platform.Platform
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
	return testenv.Run(m, func(e *testenv.Env) {
		env = e
		if plat, err = platform.New(e.Client, dir); err != nil {
			panic(err)
		}
		plat.Start(e.Config, nil)
	})
}
