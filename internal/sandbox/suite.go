package sandbox

import (
	"fmt"
	"os"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// SuiteDeadline is the driver's backup and restore deadline in suites that
// run on the sandbox: long enough for real etcd data, short enough that a
// stuck job fails the test instead of its timeout.
const SuiteDeadline = 3 * time.Minute

// RunSuite is a TestMain body for suites on the sandbox: it starts one with
// o (the driver's deadlines set to SuiteDeadline unless o.Driver sets
// them), hands it to ready, runs the tests and stops it. name prefixes
// set-up errors. Logs follow testenv.SetupLogs (TEST_LOGS=1 shows them).
func RunSuite(m interface{ Run() int }, name string, o Options, ready func(*Sandbox) error) int {
	testenv.SetupLogs()
	tweak := o.Driver
	o.Driver = func(mo *manager.Options) {
		mo.BackupDeadline, mo.RestoreDeadline = SuiteDeadline, SuiteDeadline
		if tweak != nil {
			tweak(mo)
		}
	}
	sb, err := Start(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: start sandbox: %v\n", name, err)
		return 1
	}
	defer func() {
		if err := sb.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stop sandbox: %v\n", name, err)
		}
	}()
	if ready != nil {
		if err := ready(sb); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	return m.Run()
}
