package step

import (
	"context"
	"fmt"
	"io"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Main is etcd-stage: it parses args (without the program name), reads the
// S3 keys and the optional CA bundle from env, stages the object to --out,
// writes the Report to the termination log and stdout, and returns the
// exit code. Errors are described on stderr as well. It cannot stage a
// point: MainWith can.
func Main(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, env, stdout, stderr, nil)
}

// MainWith is Main staging a point (--chain ...) with replay: etcd-stage
// passes pointreplay/run.Staging, which links etcd's server; the driver,
// which imports this package for the Jobs' arguments, does not.
func MainWith(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer, replay PointReplay) int {
	o, err := Parse(args, stderr)
	var res Result
	if err == nil {
		res, err = run(ctx, o, env, replay)
	}
	r := NewReport(res, err)
	if err != nil {
		fmt.Fprintf(stderr, "etcd-stage: %s: %v\n", r.Reason, err)
	}
	report.Emit("etcd-stage", r.Line(), o.TerminationLog, stdout, stderr)
	return r.ExitCode()
}

func run(ctx context.Context, o Options, env func(string) string, replay PointReplay) (Result, error) {
	r, err := Fetch(ctx, o.source(), env)
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	if o.Point.Set() {
		return stageAtPoint(ctx, o, r, env, replay)
	}
	return Stage(r, o.Size, o.SHA256, o.Out, o.Plan())
}

// StoreFromEnv is how every step reaches S3: the keys and the driver's
// optional CA bundle (tenantjobs.CredentialsEnv) read from env, under the
// endpoint policy of cidrs and allowHTTP. Missing keys wrap
// s3object.ErrCredentials; bad ranges or a bundle with no certificate wrap
// ErrArguments.
func StoreFromEnv(cidrs []string, allowHTTP bool, env func(string) string) (s3object.Store, s3object.Credentials, error) {
	creds := s3object.Credentials{AccessKeyID: env(s3object.AccessKeyIDKey), SecretAccessKey: env(s3object.SecretAccessKeyKey)}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return s3object.Store{}, creds, fmt.Errorf("%w: %s or %s is not set", s3object.ErrCredentials, s3object.AccessKeyIDKey, s3object.SecretAccessKeyKey)
	}
	policy, err := endpointpolicy.Parse(cidrs)
	if err != nil {
		return s3object.Store{}, creds, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	if pem := env(s3object.EnvCAPEM); pem != "" {
		if policy, err = policy.WithCAPEM([]byte(pem)); err != nil {
			return s3object.Store{}, creds, fmt.Errorf("%w: %s: %w", ErrArguments, s3object.EnvCAPEM, err)
		}
	}
	return s3object.Store{Policy: policy, AllowHTTP: allowHTTP}, creds, nil
}

// Source is one stored object and the endpoint policy to reach it by.
type Source struct {
	Endpoint  string
	Bucket    string
	Key       string
	Region    string
	PathStyle bool
	// Size is the recorded size the object must have (Fetch checks it);
	// SHA256 its recorded sha256 (Download and Stage check it).
	Size                 int64
	SHA256               string
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
}

// Fetch opens the object src names for reading, with the S3 keys and the
// optional CA bundle read from env, under the endpoint policy, after
// refusing an object whose size is not the recorded one (before a byte of
// it is downloaded). The caller checks the bytes (Download, Stage) and
// closes the reader. Errors sort as Stage's (Classify).
func Fetch(ctx context.Context, src Source, env func(string) string) (io.ReadCloser, error) {
	store, creds, err := StoreFromEnv(src.AllowedEndpointCIDRs, src.AllowHTTP, env)
	if err != nil {
		return nil, err
	}
	loc := s3object.Location{Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Key, Region: src.Region, ForcePathStyle: src.PathStyle}

	size, err := store.Stat(ctx, loc, creds)
	if err != nil {
		return nil, err
	}
	if size != src.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, %d recorded", s3object.ErrSizeMismatch, loc, size, src.Size)
	}
	return store.Open(ctx, loc, creds)
}
