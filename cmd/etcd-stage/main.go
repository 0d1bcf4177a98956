// Command etcd-stage is the staging step of an in-place restore: it checks
// a stored etcd snapshot against the driver's recorded facts and rewrites
// it so that the etcd-operator's plain restore of it starts above the live
// revision with everything below compacted. See internal/staging.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearse"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/version"
)

func main() {
	// Answered before staging.Main parses its flags: --version is the
	// binary's, not the staging step's.
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(version.String("etcd-backup-driver etcd-stage"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	switch {
	case len(os.Args) > 1 && os.Args[1] == rehearse.Subcommand:
		code = rehearse.Main(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
	default:
		code = staging.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
