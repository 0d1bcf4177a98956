// Package cozystack runs the driver as on a Cozystack platform: on
// Cozystack's own backups.cozystack.io and strategy.backups.cozystack.io
// CRDs, as every suite does (testenv.CozystackCRDs), beside the driver's
// own group (the StrategyPolicy holds the platform admin's settings for a
// strategy), and with the driver's own Plan scheduler off (Cozystack's
// Plan controller schedules; the tests play its part). The
// S3 server speaks https (http needs the StrategyPolicy's opt-in), with a
// CA the driver is given by --s3-ca-file (platform.New).
package cozystack

import (
	"fmt"
	"os"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
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
	dir, err := os.MkdirTemp("", "cozystack-suite-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	return testenv.RunWith(m, testenv.Options{}, func(e *testenv.Env) {
		env = e
		if plat, err = platform.New(e.Client, dir); err != nil {
			panic(err)
		}
		plat.Start(e.Config, func(o *manager.Options) {
			o.DisabledControllers = []string{"plan"}
		})
	})
}
