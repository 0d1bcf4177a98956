// Command etcd-stage is the staging step of an in-place restore: it checks
// a stored etcd snapshot against the driver's recorded facts and rewrites
// it so that the etcd-operator's plain restore of it starts above the live
// revision with everything below compacted. See internal/staging.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := staging.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
