package staging

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Names of the environment variables Main reads: the credentials Secret's
// keys, as the etcd-operator's agents read them, and an optional PEM
// bundle of CAs for an https endpoint with a private CA.
const (
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvCAPEM           = "S3_CA_PEM"
)

// DefaultTerminationLog is where Kubernetes reads a container's
// termination message.
const DefaultTerminationLog = "/dev/termination-log"

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
	// DefaultTerminationLog.
	TerminationLog string
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
	return checkArgs(o.Size, o.SHA256, o.Out, o.Plan())
}

// Args are the container arguments that make Parse return o.
func (o Options) Args() []string {
	args := []string{
		"--endpoint=" + o.Endpoint,
		"--bucket=" + o.Bucket,
		"--key=" + o.Key,
	}
	if o.Region != "" {
		args = append(args, "--region="+o.Region)
	}
	if o.PathStyle {
		args = append(args, "--path-style")
	}
	args = append(args, "--size="+strconv.FormatInt(o.Size, 10), "--sha256="+o.SHA256)
	if o.RevisionFloor != 0 {
		args = append(args, "--revision-floor="+strconv.FormatInt(o.RevisionFloor, 10))
	}
	if o.BumpRevision != 0 {
		args = append(args, "--bump-revision="+strconv.FormatInt(o.BumpRevision, 10))
	}
	args = append(args, "--out="+o.Out)
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

// Parse reads etcd-stage's flags (without the program name) and validates
// them; usage and flag errors go to stderr.
func Parse(args []string, stderr io.Writer) (Options, error) {
	var o Options
	var cidrs string
	fs := flag.NewFlagSet("etcd-stage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Endpoint, "endpoint", "", "S3 endpoint URL (https://host[:port]).")
	fs.StringVar(&o.Bucket, "bucket", "", "Bucket of the snapshot object.")
	fs.StringVar(&o.Key, "key", "", "Exact key of the snapshot object.")
	fs.StringVar(&o.Region, "region", "", "S3 region (default us-east-1).")
	fs.BoolVar(&o.PathStyle, "path-style", false, "Address the bucket in the path rather than the host name.")
	fs.Int64Var(&o.Size, "size", 0, "Recorded size of the object in bytes; anything else is refused.")
	fs.StringVar(&o.SHA256, "sha256", "", "Recorded sha256 of the object, 64 lower-case hex digits; anything else is refused.")
	fs.Int64Var(&o.RevisionFloor, "revision-floor", 0, fmt.Sprintf("Live revision read before the cluster stopped: the staged snapshot restores at max(snapshot, floor)+%d.", DefaultMargin))
	fs.Int64Var(&o.BumpRevision, "bump-revision", 0, fmt.Sprintf("Raise the snapshot's revision by this much instead (when the live revision is unknown; etcd recommends %d).", UnknownLiveBump))
	fs.StringVar(&o.Out, "out", "", "Path of the staged snapshot, on the volume the etcd-operator restores from.")
	fs.StringVar(&cidrs, "allowed-endpoint-cidrs", "", "Comma-separated address ranges the endpoint may reach although denied by default.")
	fs.BoolVar(&o.AllowHTTP, "allow-http", false, "Allow a plain http endpoint.")
	fs.StringVar(&o.TerminationLog, "termination-log", "", "File that receives the one-line JSON report, the container's termination message (default "+DefaultTerminationLog+").")
	// On an error the options read so far are returned too: Main still
	// wants --termination-log to report the error.
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", ErrArguments, fs.Args())
	}
	for _, c := range strings.Split(cidrs, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.AllowedEndpointCIDRs = append(o.AllowedEndpointCIDRs, c)
		}
	}
	return o, o.Validate()
}
