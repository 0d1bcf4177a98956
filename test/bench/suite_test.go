// Package bench measures the driver at platform scale against a real API
// server: a thousand tenants backing up at once, the driver's CPU and memory
// with ten thousand Backups cached, and concurrent in-place restores. The
// driver runs as its own process (bin/manager, as the chart runs it), so
// that its CPU time, RSS and API requests are its own; an event-driven
// operator plays the etcd-operator and Flux with a fixed delay.
//
// Run it with `make bench`. Sizes come from the environment:
// BENCH_TENANTS (1000), BENCH_BACKUPS (10000 in all), BENCH_JOB_HISTORY (3
// rounds of BackupJobs kept; 0 keeps all), BENCH_RESTORES (20),
// BENCH_OPERATOR_DELAY (2s), BENCH_DRIVER_ARGS (extra manager flags) and
// BENCH_DRIVER_ENV (its environment, e.g. GOMEMLIMIT=150MiB),
// BENCH_SHARD_TENANTS (3000, for BenchmarkShards), BENCH_INSPECT_DELAY (2s,
// how long BenchmarkInspection's stand-in kubelet takes per inspection Job)
// and BENCH_MANAGER_BIN (a manager binary other than bin/manager).
// Plain `go test` runs only the unit tests of the harness itself.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env  *testenv.Env
	plat *platform.Platform
	// fast is an admin client without client-side rate limits: the
	// harness must not be what limits the figures.
	fast client.Client
	op   *operator
)

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bench-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	return testenv.Run(thenStop{m, stop}, func(e *testenv.Env) {
		env = e
		cfg := rest.CopyConfig(e.Config)
		cfg.QPS = -1
		if fast, err = client.New(cfg, client.Options{Scheme: driverscheme.New()}); err != nil {
			panic(err)
		}
		if plat, err = platform.New(fast, dir); err != nil {
			panic(err)
		}
		if err := plat.Create(context.Background()); err != nil {
			panic(err)
		}
		if op, err = startOperator(ctx, cfg, plat.S3, envDuration("BENCH_OPERATOR_DELAY", defaultOperatorDelay)); err != nil {
			panic(err)
		}
	})
}

// thenStop runs the benchmarks, then stops the harness's watches before
// the API server goes.
type thenStop struct {
	m    *testing.M
	stop context.CancelFunc
}

func (t thenStop) Run() int {
	defer t.stop()
	return t.m.Run()
}
