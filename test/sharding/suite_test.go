// Package sharding runs the driver as several shards over one API server,
// as the chart deploys it with shards > 1: the chart's own
// MutatingAdmissionPolicy labels tenants' objects, one manager per shard
// (and a standby where a test needs one) reconciles its namespaces, and the
// test kit's operator plays the etcd-operator and Flux.
package sharding

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// shards is the shard count of the suite's admission policy and managers.
const shards = 3

var (
	env  *testenv.Env
	plat *platform.Platform
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sharding-s3-")
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
		if err := plat.Create(context.Background()); err != nil {
			panic(err)
		}
		if err := platform.InstallShardPolicy(context.Background(), e.Client, shards); err != nil {
			panic(err)
		}
	})
}

// policyWait is how long the API server may take to load a new policy.
const policyWait = 30 * time.Second
