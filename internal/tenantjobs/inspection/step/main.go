package step

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Subcommand is etcd-stage's first argument that runs Main.
const Subcommand = "inspect"

// Options are `etcd-stage inspect`'s flags. The driver builds the
// inspection Job's arguments with Args, from the Backup's recorded facts.
type Options struct {
	// Source is the one object to inspect, its recorded size and sha256
	// (which it must match), and the driver's endpoint policy.
	stagingstep.Source
	// WorkDir receives the downloaded database while it is read (an
	// emptyDir of the Pod); the file is removed afterwards.
	WorkDir string
	// TerminationLog receives the Report; empty means
	// report.TerminationLog.
	TerminationLog string
}

// Validate refuses options `etcd-stage inspect` cannot run with.
func (o Options) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"--endpoint", o.Endpoint}, {"--bucket", o.Bucket}, {"--key", o.Key}, {"--sha256", o.SHA256}, {"--work-dir", o.WorkDir},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s required", stagingstep.ErrArguments, strings.Join(missing, ", "))
	}
	return stagingstep.CheckObject(o.Size, o.SHA256)
}

// Args are the container arguments, the subcommand first, that make
// Parse (of the arguments after the subcommand) return o.
func (o Options) Args() []string {
	args := append([]string{Subcommand}, o.ObjectArgs()...)
	args = append(args, "--work-dir="+o.WorkDir)
	args = append(args, o.PolicyArgs()...)
	return append(args, stagingstep.TerminationLogArgs(o.TerminationLog)...)
}

// Parse reads `etcd-stage inspect`'s flags (the arguments after the
// subcommand) and validates them; usage and flag errors go to stderr.
func Parse(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("etcd-stage inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	done := stagingstep.BindSource(fs, &o.Source)
	fs.StringVar(&o.WorkDir, "work-dir", "", "Folder that holds the downloaded database while it is read.")
	fs.StringVar(&o.TerminationLog, "termination-log", "", "File that receives the one-line JSON report, the container's termination message (default "+report.TerminationLog+").")
	// On an error the options read so far are returned too: Main still
	// wants --termination-log to report the error.
	if err := stagingstep.ParseFlags(fs, args, done); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// Main is `etcd-stage inspect`: it parses args (after the subcommand),
// reads the S3 keys and the optional CA bundle from env as staging does,
// downloads the object into --work-dir with staging's checks (size,
// sha256, etcd's trailer), inspects the database, removes it, writes the
// Report to the termination log and stdout, and returns staging's exit
// code for it.
func Main(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	o, err := Parse(args, stderr)
	var m driverv1alpha1.BackupManifest
	if err == nil {
		m, err = run(ctx, o, env)
	}
	r := NewReport(m, err)
	if err != nil {
		fmt.Fprintf(stderr, "etcd-stage inspect: %s: %v\n", r.Reason, err)
	}
	report.Emit("etcd-stage inspect", r.Line(), o.TerminationLog, stdout, stderr)
	return r.ExitCode()
}

// downloadPrefix names the downloaded database in the work dir.
const downloadPrefix = ".inspect-"

func run(ctx context.Context, o Options, env func(string) string) (driverv1alpha1.BackupManifest, error) {
	r, err := stagingstep.Fetch(ctx, o.Source, env)
	if err != nil {
		return driverv1alpha1.BackupManifest{}, err
	}
	path, err := stagingstep.Download(r, o.Size, o.SHA256, o.WorkDir, downloadPrefix)
	r.Close()
	if err != nil {
		return driverv1alpha1.BackupManifest{}, err
	}
	m, err := InspectFile(path)
	if rerr := os.Remove(path); err == nil && rerr != nil {
		err = stagingstep.LocalError(fmt.Errorf("remove the downloaded database: %w", rerr))
	}
	return m, err
}
