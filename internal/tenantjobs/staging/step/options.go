package step

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Options are etcd-stage's flags. The driver builds the staging Job's
// arguments with Args, from facts it signed, never from tenant input.
type Options struct {
	// The one object to stage.
	Endpoint  string
	Bucket    string
	Key       string
	Region    string
	PathStyle bool
	// Size and SHA256 (64 hex digits) are the recorded facts the object
	// must match.
	Size   int64
	SHA256 string
	// Exactly one of RevisionFloor (the live revision read before the
	// cluster stopped: FloorPlan) and BumpRevision (BumpPlan) is set.
	RevisionFloor int64
	BumpRevision  int64
	// Out is the staged file, on the volume the operator restores from.
	Out string
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	// TerminationLog receives the Report; empty means
	// report.TerminationLog.
	TerminationLog string
	// Point, when set, is the point the object is replayed to before it
	// is staged (a restore to a point: StageAt).
	Point pointreplay.Point
}

// Plan is the revision plan the options name.
func (o Options) Plan() Plan {
	if o.BumpRevision > 0 {
		return BumpPlan(o.BumpRevision)
	}
	return FloorPlan(o.RevisionFloor)
}

// Validate refuses options etcd-stage cannot run with.
func (o Options) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"--endpoint", o.Endpoint}, {"--bucket", o.Bucket}, {"--key", o.Key}, {"--sha256", o.SHA256}, {"--out", o.Out},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s required", ErrArguments, strings.Join(missing, ", "))
	}
	if (o.RevisionFloor > 0) == (o.BumpRevision > 0) || o.RevisionFloor < 0 || o.BumpRevision < 0 {
		return fmt.Errorf("%w: exactly one of --revision-floor and --bump-revision must be a positive revision", ErrArguments)
	}
	if err := o.checkPoint(); err != nil {
		return err
	}
	return checkArgs(o.Size, o.SHA256, o.Out, o.Plan())
}

// source is the object and the endpoint policy o names.
func (o Options) source() Source {
	return Source{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
		Size: o.Size, SHA256: o.SHA256, AllowedEndpointCIDRs: o.AllowedEndpointCIDRs, AllowHTTP: o.AllowHTTP,
	}
}

// WithSource is o staging the object src names, under its endpoint
// policy.
func (o Options) WithSource(src Source) Options {
	o.Endpoint, o.Bucket, o.Key, o.Region, o.PathStyle = src.Endpoint, src.Bucket, src.Key, src.Region, src.PathStyle
	o.Size, o.SHA256, o.AllowedEndpointCIDRs, o.AllowHTTP = src.Size, src.SHA256, src.AllowedEndpointCIDRs, src.AllowHTTP
	return o
}

// Args are the container arguments that make Parse return o.
func (o Options) Args() []string {
	src := o.source()
	args := src.ObjectArgs()
	if o.RevisionFloor != 0 {
		args = append(args, "--revision-floor="+strconv.FormatInt(o.RevisionFloor, 10))
	}
	if o.BumpRevision != 0 {
		args = append(args, "--bump-revision="+strconv.FormatInt(o.BumpRevision, 10))
	}
	args = append(args, "--out="+o.Out)
	args = append(args, o.Point.Args()...)
	args = append(args, src.PolicyArgs()...)
	return append(args, TerminationLogArgs(o.TerminationLog)...)
}

// ObjectArgs are the flags naming s's object and its recorded size and
// sha256, as BindSource reads them.
func (s Source) ObjectArgs() []string {
	args := []string{"--endpoint=" + s.Endpoint, "--bucket=" + s.Bucket, "--key=" + s.Key}
	if s.Region != "" {
		args = append(args, "--region="+s.Region)
	}
	if s.PathStyle {
		args = append(args, "--path-style")
	}
	return append(args, "--size="+strconv.FormatInt(s.Size, 10), "--sha256="+s.SHA256)
}

// PolicyArgs are the flags of s's endpoint policy, as BindSource reads
// them.
func (s Source) PolicyArgs() []string {
	var args []string
	if len(s.AllowedEndpointCIDRs) > 0 {
		args = append(args, "--allowed-endpoint-cidrs="+strings.Join(s.AllowedEndpointCIDRs, ","))
	}
	if s.AllowHTTP {
		args = append(args, "--allow-http")
	}
	return args
}

// TerminationLogArgs is the --termination-log flag, none for the default.
func TerminationLogArgs(path string) []string {
	if path == "" {
		return nil
	}
	return []string{"--termination-log=" + path}
}

// BindSource registers on fs the flags of one object, its recorded facts
// and the endpoint policy, read into s; the returned function, called
// after fs.Parse, splits the address ranges.
func BindSource(fs *flag.FlagSet, s *Source) func() {
	var cidrs string
	fs.StringVar(&s.Endpoint, "endpoint", "", "S3 endpoint URL (https://host[:port]).")
	fs.StringVar(&s.Bucket, "bucket", "", "Bucket of the snapshot object.")
	fs.StringVar(&s.Key, "key", "", "Exact key of the snapshot object.")
	fs.StringVar(&s.Region, "region", "", "S3 region (default us-east-1).")
	fs.BoolVar(&s.PathStyle, "path-style", false, "Address the bucket in the path rather than the host name.")
	fs.Int64Var(&s.Size, "size", 0, "Recorded size of the object in bytes; anything else is refused.")
	fs.StringVar(&s.SHA256, "sha256", "", "Recorded sha256 of the object, 64 lower-case hex digits; anything else is refused.")
	fs.StringVar(&cidrs, "allowed-endpoint-cidrs", "", "Comma-separated address ranges the endpoint may reach although denied by default.")
	fs.BoolVar(&s.AllowHTTP, "allow-http", false, "Allow a plain http endpoint.")
	return func() {
		for _, c := range strings.Split(cidrs, ",") {
			if c = strings.TrimSpace(c); c != "" {
				s.AllowedEndpointCIDRs = append(s.AllowedEndpointCIDRs, c)
			}
		}
	}
}

// ParseFlags parses args with fs (flag errors and stray arguments are
// ErrArguments) and then runs done (BindSource's function).
func ParseFlags(fs *flag.FlagSet, args []string, done func()) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrArguments, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrArguments, fs.Args())
	}
	done()
	return nil
}

// Parse reads etcd-stage's flags (without the program name) and validates
// them; usage and flag errors go to stderr.
func Parse(args []string, stderr io.Writer) (Options, error) {
	var o Options
	var src Source
	fs := flag.NewFlagSet("etcd-stage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	done := BindSource(fs, &src)
	fs.Int64Var(&o.RevisionFloor, "revision-floor", 0, fmt.Sprintf("Live revision read before the cluster stopped: the staged snapshot restores at max(snapshot, floor)+%d.", DefaultMargin))
	fs.Int64Var(&o.BumpRevision, "bump-revision", 0, fmt.Sprintf("Raise the snapshot's revision by this much instead (when the live revision is unknown; etcd recommends %d).", UnknownLiveBump))
	fs.StringVar(&o.Out, "out", "", "Path of the staged snapshot, on the volume the etcd-operator restores from.")
	fs.StringVar(&o.TerminationLog, "termination-log", "", "File that receives the one-line JSON report, the container's termination message (default "+report.TerminationLog+").")
	pointDone := pointreplay.Bind(fs, &o.Point)
	// On an error the options read so far are returned too: Main still
	// wants --termination-log to report the error.
	err := ParseFlags(fs, args, done)
	o = o.WithSource(src)
	if err != nil {
		return o, err
	}
	if err := pointDone(); err != nil {
		return o, err
	}
	return o, o.Validate()
}
