// Package brokered runs the real driver on a Cozystack-like platform whose
// strategy brokers per-tenant keys on a real MinIO server, which enforces
// every key's policy: backups, in-place restores and Delete-policy
// deletions work end to end with tenant keys that reach only their own
// prefix, and no tenant Secret holds the platform key.
package brokered

import (
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env    *testenv.Env
	plat   *platform.Platform
	server *testenv.MinIO
)

func TestMain(m *testing.M) {
	ca, err := s3ca.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// MinIO speaks https with a CA of its own, as a platform's S3 does;
	// the platform hands the driver the CA (platform.NewBrokered).
	if server, err = testenv.StartMinIOWith(testenv.MinIOOptions{CA: ca}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, func(e *testenv.Env) {
		env = e
		if plat, err = platform.NewBrokered(e.Client, server); err != nil {
			panic(err)
		}
		// Secret creates are slowed as on a loaded API server: the window
		// between a key's issue and the Secret holding it, in which a
		// sweep once retired the key (and MinIO dropped its policy).
		plat.Start(e.Config, func(o *manager.Options) {
			o.WrapClient = func(c client.Client) client.Client {
				return testenv.SlowSecretCreates{Client: c, Delay: 400 * time.Millisecond}
			}
		})
	})
	_ = server.Stop()
	os.Exit(code)
}
