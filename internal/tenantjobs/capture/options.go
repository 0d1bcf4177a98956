package capture

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Subcommand is the first argument of etcd-stage that selects the capture.
const Subcommand = "capture"

// Defaults and bounds of a segment's cut: at most every SegmentInterval
// or SegmentBytes of changes, whichever comes first.
const (
	DefaultSegmentInterval = 10 * time.Second
	MinSegmentInterval     = time.Second
	MaxSegmentInterval     = 10 * time.Minute
	DefaultSegmentBytes    = 4 << 20
	MinSegmentBytes        = 64 << 10
	// MaxSegmentBytes leaves room in a segment for one more revision of
	// the largest size the format allows.
	MaxSegmentBytes = 48 << 20
)

// Options are the capture's flags. The driver builds them with Args from
// what it knows (the tenant's etcd Service and Secret mounts, the base
// Backup's recorded facts, the tenant's S3 location), never from tenant
// input it has not checked.
type Options struct {
	// EtcdEndpoints are the tenant etcd's client URLs: https with the
	// three TLS files, or http without any (a sandbox's).
	EtcdEndpoints []string
	// EtcdCert, EtcdKey and EtcdCA are files of the tenant's etcd client
	// certificate Secret; the certificate is read again at every
	// connection, so a renewed one is picked up.
	EtcdCert, EtcdKey, EtcdCA string
	// The bucket, as staging's flags name it, and the endpoint policy.
	Endpoint             string
	Bucket               string
	Region               string
	PathStyle            bool
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	// Prefix is the tenant's prefix and the application's name
	// ("tenant-a/etcd"); the chain lives under <Prefix>/changes/<base>.
	Prefix string
	// Base is the base Backup's revision and snapshot sha256.
	Base changelog.Base
	// SegmentInterval and SegmentBytes bound a segment.
	SegmentInterval time.Duration
	SegmentBytes    int64
	// Progress is the record the capture reports its chain's progress
	// in (none when not Set).
	Progress ProgressRecord
	// TerminationLog receives the Report; empty means
	// report.TerminationLog.
	TerminationLog string
}

// Validate refuses options the capture cannot run with.
func (o Options) Validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"--etcd-endpoints", strings.Join(o.EtcdEndpoints, ",")}, {"--endpoint", o.Endpoint}, {"--bucket", o.Bucket},
		{"--prefix", o.Prefix}, {"--base-sha256", o.Base.SHA256},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s required", stagingstep.ErrArguments, strings.Join(missing, ", "))
	}
	if err := o.Base.Check(); err != nil {
		return fmt.Errorf("%w: %w", stagingstep.ErrArguments, err)
	}
	if err := changelog.CheckPrefix(o.Prefix); err != nil {
		return fmt.Errorf("%w: %w", stagingstep.ErrArguments, err)
	}
	if o.SegmentInterval < MinSegmentInterval || o.SegmentInterval > MaxSegmentInterval {
		return fmt.Errorf("%w: --segment-interval %s is not within %s..%s", stagingstep.ErrArguments, o.SegmentInterval, MinSegmentInterval, MaxSegmentInterval)
	}
	if o.SegmentBytes < MinSegmentBytes || o.SegmentBytes > MaxSegmentBytes {
		return fmt.Errorf("%w: --segment-bytes %d is not within %d..%d", stagingstep.ErrArguments, o.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	}
	tls := o.EtcdCert != "" || o.EtcdKey != "" || o.EtcdCA != ""
	if tls && (o.EtcdCert == "" || o.EtcdKey == "" || o.EtcdCA == "") {
		return fmt.Errorf("%w: --etcd-cert, --etcd-key and --etcd-ca go together", stagingstep.ErrArguments)
	}
	if o.Progress.Set() != (o.Progress.TokenFile != "" && o.Progress.CAFile != "") {
		return fmt.Errorf("%w: --progress, --progress-token-file and --progress-ca-file go together", stagingstep.ErrArguments)
	}
	if len(o.EtcdEndpoints) > 16 {
		return fmt.Errorf("%w: more than 16 etcd endpoints", stagingstep.ErrArguments)
	}
	for _, e := range o.EtcdEndpoints {
		u, err := url.Parse(e)
		if err != nil || u.Host == "" || u.Path != "" || u.User != nil || (tls && u.Scheme != "https") || (!tls && u.Scheme != "http") {
			return fmt.Errorf("%w: etcd endpoint %q: want https://host:port with the TLS files, http://host:port without", stagingstep.ErrArguments, e)
		}
	}
	return nil
}

// Args are the container arguments (after the subcommand) that make
// Parse return o.
func (o Options) Args() []string {
	args := []string{"--etcd-endpoints=" + strings.Join(o.EtcdEndpoints, ",")}
	for _, f := range []struct{ name, v string }{{"etcd-cert", o.EtcdCert}, {"etcd-key", o.EtcdKey}, {"etcd-ca", o.EtcdCA}, {"region", o.Region}} {
		if f.v != "" {
			args = append(args, "--"+f.name+"="+f.v)
		}
	}
	args = append(args, "--endpoint="+o.Endpoint, "--bucket="+o.Bucket)
	if o.PathStyle {
		args = append(args, "--path-style")
	}
	if len(o.AllowedEndpointCIDRs) > 0 {
		args = append(args, "--allowed-endpoint-cidrs="+strings.Join(o.AllowedEndpointCIDRs, ","))
	}
	if o.AllowHTTP {
		args = append(args, "--allow-http")
	}
	args = append(args, "--prefix="+o.Prefix, "--base-revision="+strconv.FormatInt(o.Base.Revision, 10), "--base-sha256="+o.Base.SHA256,
		"--segment-interval="+o.SegmentInterval.String(), "--segment-bytes="+strconv.FormatInt(o.SegmentBytes, 10))
	if o.Progress.Set() {
		args = append(args, "--progress="+o.Progress.flag(), "--progress-token-file="+o.Progress.TokenFile, "--progress-ca-file="+o.Progress.CAFile)
	}
	return append(args, stagingstep.TerminationLogArgs(o.TerminationLog)...)
}

// Parse reads the capture's flags (without the subcommand) and validates
// them. On an error the options read so far are returned too, so the
// report still reaches --termination-log.
func Parse(args []string, stderr io.Writer) (Options, error) {
	o := Options{SegmentInterval: DefaultSegmentInterval, SegmentBytes: DefaultSegmentBytes}
	var endpoints, cidrs, progress string
	fs := flag.NewFlagSet("etcd-stage "+Subcommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&endpoints, "etcd-endpoints", "", "Comma-separated client URLs of the tenant's etcd.")
	fs.StringVar(&o.EtcdCert, "etcd-cert", "", "File of the etcd client certificate (PEM).")
	fs.StringVar(&o.EtcdKey, "etcd-key", "", "File of the etcd client certificate's key (PEM).")
	fs.StringVar(&o.EtcdCA, "etcd-ca", "", "File of the CA that signed the etcd servers' certificates (PEM).")
	fs.StringVar(&o.Endpoint, "endpoint", "", "S3 endpoint URL (https://host[:port]).")
	fs.StringVar(&o.Bucket, "bucket", "", "Bucket the chain is written to.")
	fs.StringVar(&o.Region, "region", "", "S3 region (default us-east-1).")
	fs.BoolVar(&o.PathStyle, "path-style", false, "Address the bucket in the path rather than the host name.")
	fs.StringVar(&cidrs, "allowed-endpoint-cidrs", "", "Comma-separated address ranges the endpoint may reach although denied by default.")
	fs.BoolVar(&o.AllowHTTP, "allow-http", false, "Allow a plain http endpoint.")
	fs.StringVar(&o.Prefix, "prefix", "", "The tenant's prefix and the application's name; the chain lives under <prefix>/changes/<base revision>/.")
	fs.Int64Var(&o.Base.Revision, "base-revision", 0, "Revision of the base Backup the chain follows.")
	fs.StringVar(&o.Base.SHA256, "base-sha256", "", "Recorded sha256 of the base Backup's snapshot, 64 lower-case hex digits.")
	fs.DurationVar(&o.SegmentInterval, "segment-interval", DefaultSegmentInterval, "Cut a segment at most this long after its first change.")
	fs.Int64Var(&o.SegmentBytes, "segment-bytes", DefaultSegmentBytes, "Cut a segment once its changes reach this many bytes.")
	fs.StringVar(&progress, "progress", "", "namespace/name of the CaptureProgress record whose status the capture writes (none when empty).")
	fs.StringVar(&o.Progress.TokenFile, "progress-token-file", "", "File of the ServiceAccount token that may patch the record's status (read again at every write).")
	fs.StringVar(&o.Progress.CAFile, "progress-ca-file", "", "File of the API server's CA bundle (PEM).")
	fs.StringVar(&o.TerminationLog, "termination-log", "", "File that receives the one-line JSON report (default "+report.TerminationLog+").")
	var recErr error
	err := stagingstep.ParseFlags(fs, args, func() {
		o.EtcdEndpoints, o.AllowedEndpointCIDRs = splitList(endpoints), splitList(cidrs)
		var rec ProgressRecord
		rec, recErr = parseRecord(progress)
		o.Progress.Namespace, o.Progress.Name = rec.Namespace, rec.Name
	})
	if err != nil {
		return o, err
	}
	if recErr != nil {
		return o, fmt.Errorf("%w: %w", stagingstep.ErrArguments, recErr)
	}
	return o, o.Validate()
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
