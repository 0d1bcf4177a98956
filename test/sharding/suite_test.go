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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
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
		if err := installPolicy(context.Background()); err != nil {
			panic(err)
		}
	})
}

// policyObjects are the chart's MutatingAdmissionPolicy and its binding,
// rendered with the Helm SDK for the suite's shard count.
func policyObjects() ([]*unstructured.Unstructured, error) {
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "etcd-backup-driver", Namespace: testenv.DriverNamespace, Values: map[string]any{"shards": shards}})
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, kind := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
		o := chartrender.Find(objs, kind, "etcd-backup-driver-shard")
		if o == nil {
			return nil, fmt.Errorf("the chart rendered with shards=%d has no %s", shards, kind)
		}
		out = append(out, o)
	}
	return out, nil
}

// installPolicy creates the chart's policy and binding as an admin would
// with `helm install`.
func installPolicy(ctx context.Context) error {
	objs, err := policyObjects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("create %s: %w", o.GetKind(), err)
		}
	}
	return nil
}

// policyWait is how long the API server may take to load a new policy.
const policyWait = 30 * time.Second
