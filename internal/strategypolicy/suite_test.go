package strategypolicy_test

import (
	"os"
	"testing"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}
