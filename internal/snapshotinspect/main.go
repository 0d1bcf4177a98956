package snapshotinspect

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
)

// Subcommand is etcd-stage's first argument that runs Main.
const Subcommand = "inspect"

// Options are `etcd-stage inspect`'s flags. The driver builds the
// inspection Job's arguments with Args, from the Backup's recorded facts.
type Options struct {
	// The one object to inspect.
	Endpoint  string
	Bucket    string
	Key       string
	Region    string
	PathStyle bool
	// Size and SHA256 (64 hex digits) are the recorded facts the object
	// must match.
	Size   int64
	SHA256 string
	// WorkDir receives the downloaded database while it is read (an
	// emptyDir of the Pod); the file is removed afterwards.
	WorkDir string
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	// TerminationLog receives the Report; empty means
	// staging.DefaultTerminationLog.
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
		return fmt.Errorf("%w: %s required", staging.ErrArguments, strings.Join(missing, ", "))
	}
	return staging.CheckObject(o.Size, o.SHA256)
}

// Args are the container arguments, the subcommand first, that make
// Parse (of the arguments after the subcommand) return o.
func (o Options) Args() []string {
	args := []string{Subcommand, "--endpoint=" + o.Endpoint, "--bucket=" + o.Bucket, "--key=" + o.Key}
	if o.Region != "" {
		args = append(args, "--region="+o.Region)
	}
	if o.PathStyle {
		args = append(args, "--path-style")
	}
	args = append(args, "--size="+strconv.FormatInt(o.Size, 10), "--sha256="+o.SHA256, "--work-dir="+o.WorkDir)
	if len(o.AllowedEndpointCIDRs) > 0 {
		args = append(args, "--allowed-endpoint-cidrs="+strings.Join(o.AllowedEndpointCIDRs, ","))
	}
	if o.AllowHTTP {
		args = append(args, "--allow-http")
	}
	if o.TerminationLog != "" {
		args = append(args, "--termination-log="+o.TerminationLog)
	}
	return args
}

// Parse reads `etcd-stage inspect`'s flags (the arguments after the
// subcommand) and validates them; usage and flag errors go to stderr.
func Parse(args []string, stderr io.Writer) (Options, error) {
	var o Options
	var cidrs string
	fs := flag.NewFlagSet("etcd-stage inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Endpoint, "endpoint", "", "S3 endpoint URL (https://host[:port]).")
	fs.StringVar(&o.Bucket, "bucket", "", "Bucket of the snapshot object.")
	fs.StringVar(&o.Key, "key", "", "Exact key of the snapshot object.")
	fs.StringVar(&o.Region, "region", "", "S3 region (default us-east-1).")
	fs.BoolVar(&o.PathStyle, "path-style", false, "Address the bucket in the path rather than the host name.")
	fs.Int64Var(&o.Size, "size", 0, "Recorded size of the object in bytes; anything else is refused.")
	fs.StringVar(&o.SHA256, "sha256", "", "Recorded sha256 of the object, 64 lower-case hex digits; anything else is refused.")
	fs.StringVar(&o.WorkDir, "work-dir", "", "Folder that holds the downloaded database while it is read.")
	fs.StringVar(&cidrs, "allowed-endpoint-cidrs", "", "Comma-separated address ranges the endpoint may reach although denied by default.")
	fs.BoolVar(&o.AllowHTTP, "allow-http", false, "Allow a plain http endpoint.")
	fs.StringVar(&o.TerminationLog, "termination-log", "", "File that receives the one-line JSON report, the container's termination message (default "+staging.DefaultTerminationLog+").")
	// On an error the options read so far are returned too: Main still
	// wants --termination-log to report the error.
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", staging.ErrArguments, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", staging.ErrArguments, fs.Args())
	}
	for _, c := range strings.Split(cidrs, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.AllowedEndpointCIDRs = append(o.AllowedEndpointCIDRs, c)
		}
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
	var m backupsv1alpha1.BackupManifest
	if err == nil {
		m, err = run(ctx, o, env)
	}
	report := NewReport(m, err)
	line := report.Line()
	fmt.Fprint(stdout, line)
	if err != nil {
		fmt.Fprintf(stderr, "etcd-stage inspect: %s: %v\n", report.Reason, err)
	}
	logPath := o.TerminationLog
	if logPath == "" {
		logPath = staging.DefaultTerminationLog
	}
	if werr := os.WriteFile(logPath, []byte(line), 0o644); werr != nil {
		// The exit code still tells the Job what happened.
		fmt.Fprintf(stderr, "etcd-stage inspect: write the termination log: %v\n", werr)
	}
	return report.ExitCode()
}

// downloadPrefix names the downloaded database in the work dir.
const downloadPrefix = ".inspect-"

func run(ctx context.Context, o Options, env func(string) string) (backupsv1alpha1.BackupManifest, error) {
	r, err := staging.Fetch(ctx, staging.Source{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
		Size: o.Size, AllowedEndpointCIDRs: o.AllowedEndpointCIDRs, AllowHTTP: o.AllowHTTP,
	}, env)
	if err != nil {
		return backupsv1alpha1.BackupManifest{}, err
	}
	path, err := staging.Download(r, o.Size, o.SHA256, o.WorkDir, downloadPrefix)
	r.Close()
	if err != nil {
		return backupsv1alpha1.BackupManifest{}, err
	}
	m, err := InspectFile(path)
	if rerr := os.Remove(path); err == nil && rerr != nil {
		err = staging.LocalError(fmt.Errorf("remove the downloaded database: %w", rerr))
	}
	return m, err
}
