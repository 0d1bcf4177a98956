// Command etcd-stage is the staging step of an in-place restore: it checks
// a stored etcd snapshot against the driver's recorded facts and rewrites
// it so that the etcd-operator's plain restore of it starts above the live
// revision with everything below compacted. See
// internal/tenantjobs/staging/step.
//
// `etcd-stage inspect ...` is the inspection step of a backup: it checks the
// stored snapshot the same way and reports what it holds. See
// internal/tenantjobs/inspection/step.
//
// `etcd-stage rehearse ...` is a dry-run restore's step: it stages the
// snapshot as a restore would, boots it in a throwaway etcd on loopback
// and reads it back. See internal/tenantjobs/rehearsal/step.
//
// `etcd-stage capture ...` is the change capture of point-in-time restore,
// a long-running Pod in the tenant's namespace: it watches the tenant's
// etcd and writes its changes to S3 as a chain of segments. See
// internal/tenantjobs/capture.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/memlimit"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	capturestep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/step"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	pointrun "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay/run"
	rehearsalstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	rehearsalrun "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step/run"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/version"
)

func main() {
	// Answered before stagingstep.Main parses its flags: --version is the
	// binary's, not the staging step's.
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(version.String("etcd-backup-driver etcd-stage"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	switch {
	case len(os.Args) > 1 && os.Args[1] == inspectionstep.Subcommand:
		// The inspection Job: read what a stored snapshot holds.
		code = inspectionstep.Main(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == rehearsalstep.Subcommand:
		// A dry run's rehearsal: stage, boot and read back.
		code = rehearsalrun.Main(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == capture.Subcommand:
		// The change capture runs for days next to a hostile etcd: the
		// collector keeps its heap under the Pod's memory limit.
		if _, err := memlimit.Apply("/sys/fs/cgroup", 0.9); err != nil {
			fmt.Fprintf(os.Stderr, "etcd-stage capture: memory limit: %v\n", err)
		}
		code = capturestep.Main(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
	default:
		_, _ = memlimit.Apply("/sys/fs/cgroup", 0.9) // a restore to a point runs a scratch etcd in this process
		code = stagingstep.MainWith(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, pointrun.Staging)
	}
	stop()
	os.Exit(code)
}
