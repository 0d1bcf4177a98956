package step

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changereplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

func TestArgsRoundTrip(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, o := range []Options{
		{Endpoint: "https://s3.example.com", Bucket: "b", Key: "t/etcd/a b.db", Size: 4128, SHA256: sum, RevisionFloor: 12345, Out: "/staging/snapshot.db"},
		{Endpoint: "http://10.0.0.1:9000", Bucket: "b", Key: "k", Region: "eu-1", PathStyle: true, Size: 4128, SHA256: sum,
			BumpRevision: UnknownLiveBump, Out: "/s/x.db", AllowedEndpointCIDRs: []string{"10.0.0.0/8", "127.0.0.0/8"}, AllowHTTP: true, TerminationLog: "/tmp/log"},
		{Endpoint: "https://s3.example.com", Bucket: "b", Key: "t/etcd/a.db", Size: 4128, SHA256: sum, RevisionFloor: 12345, Out: "/staging/restore.db",
			Point: pointreplay.Point{Chain: "t/etcd/changes/40", Base: changelog.Base{Revision: 40, SHA256: sum},
				Target: changelog.Target{Time: time.Date(2026, 12, 6, 17, 0, 0, 5, time.UTC)}}},
	} {
		got, err := Parse(o.Args(), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", o.Args(), err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, o)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	base := Options{Endpoint: "https://s3", Bucket: "b", Key: "k", Size: 4128, SHA256: sum, RevisionFloor: 1, Out: "/o"}
	for name, mutate := range map[string]func(*Options){
		"floor and bump":   func(o *Options) { o.BumpRevision = 5 },
		"neither":          func(o *Options) { o.RevisionFloor = 0 },
		"negative bump":    func(o *Options) { o.RevisionFloor, o.BumpRevision = 0, -5 },
		"no key":           func(o *Options) { o.Key = "" },
		"short checksum":   func(o *Options) { o.SHA256 = "abc" },
		"size of no db":    func(o *Options) { o.Size = 32 },
		"no output":        func(o *Options) { o.Out = "" },
		"missing endpoint": func(o *Options) { o.Endpoint = "" },
	} {
		o := base
		mutate(&o)
		if _, err := Parse(o.Args(), &bytes.Buffer{}); !errors.Is(err, ErrArguments) {
			t.Errorf("%s: Parse = %v, want ErrArguments", name, err)
		}
	}
	if _, err := Parse(append(base.Args(), "extra"), &bytes.Buffer{}); !errors.Is(err, ErrArguments) {
		t.Errorf("a stray argument: %v", err)
	}
	point := append(base.Args(), "--chain=t/etcd/changes/40", "--chain-base-revision=40", "--chain-base-sha256="+base.SHA256, "--to-revision=50")
	if _, err := Parse(point, &bytes.Buffer{}); !errors.Is(err, ErrArguments) {
		t.Errorf("a chain that is not beside the object: %v", err)
	}
	if _, err := Parse([]string{"--no-such-flag"}, &bytes.Buffer{}); !errors.Is(err, ErrArguments) {
		t.Errorf("an unknown flag: %v", err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		reason    report.Reason
		retryable bool
		exit      int
	}{
		{nil, ReasonStaged, false, report.ExitSucceeded},
		{fmt.Errorf("x: %w", s3object.ErrSizeMismatch), ReasonArtifactChanged, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrChecksumMismatch), ReasonArtifactChanged, false, report.ExitRefused},
		{errTooLarge, ReasonArtifactChanged, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrCorrupt), ReasonArtifactCorrupt, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrNotFound), ReasonArtifactMissing, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrNoSuchBucket), ReasonArtifactMissing, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrRefused), ReasonEndpointRefused, false, report.ExitRefused},
		{fmt.Errorf("x: %w", ErrArguments), ReasonInvalidArguments, false, report.ExitRefused},
		{fmt.Errorf("x: %w", ErrPlan), ReasonInvalidArguments, false, report.ExitRefused},
		{fmt.Errorf("x: %w", s3object.ErrAccessDenied), ReasonCredentialsRejected, true, report.ExitRetryable},
		{fmt.Errorf("x: %w", s3object.ErrCredentials), ReasonCredentialsRejected, true, report.ExitRetryable},
		{fmt.Errorf("x: %w", localError{errors.New("no space left on device")}), ReasonVolumeFailed, true, report.ExitRetryable},
		{errors.New("connection reset by peer"), ReasonTransient, true, report.ExitRetryable},
		{fmt.Errorf("x: %w", &changelog.SegmentError{Seq: 3, Err: changelog.ErrChecksum}), pointreplay.ReasonChainChecksum, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrOutOfOrder), pointreplay.ReasonChainOutOfOrder, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrMissing), pointreplay.ReasonChainMissing, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrChainBroken), pointreplay.ReasonChainBroken, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrGap), pointreplay.ReasonChainGap, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrOverlap), pointreplay.ReasonChainOverlap, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrForeignChain), pointreplay.ReasonChainForeign, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrCorrupt), pointreplay.ReasonChainCorrupt, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrTooLarge), pointreplay.ReasonChainTooLarge, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrOutsideWindow), pointreplay.ReasonPointOutsideWindow, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changelog.ErrNoIndex), pointreplay.ReasonChainNoIndex, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changereplay.ErrBaseMismatch), pointreplay.ReasonChainBaseMismatch, false, report.ExitRefused},
		{fmt.Errorf("x: %w", changereplay.ErrDiverged), pointreplay.ReasonReplayDiverged, false, report.ExitRefused},
		{fmt.Errorf("x: %w", pointreplay.ErrInvalidPoint), pointreplay.ReasonInvalidPoint, false, report.ExitRefused},
		{fmt.Errorf("x: %w: %w", changereplay.ErrBaseMismatch, &fs.PathError{Op: "open", Path: "/staging/x", Err: syscall.ENOSPC}), ReasonVolumeFailed, true, report.ExitRetryable},
		{context.DeadlineExceeded, ReasonTransient, true, report.ExitRetryable},
	} {
		reason, retryable := Classify(tc.err)
		if reason != tc.reason || retryable != tc.retryable || ExitCode(tc.err) != tc.exit || NewReport(Result{}, tc.err).ExitCode() != tc.exit {
			t.Errorf("Classify(%v) = %s, %v, exit %d; want %s, %v, exit %d", tc.err, reason, retryable, ExitCode(tc.err), tc.reason, tc.retryable, tc.exit)
		}
	}
}

func TestParseReport(t *testing.T) {
	ok := NewReport(Result{SnapshotRevision: 5, Revision: 10010, CompactedRevision: 10010, Size: 4128, SHA256: strings.Repeat("0", 64)}, nil)
	refused := NewReport(Result{Revision: 99}, fmt.Errorf("%w: %s", s3object.ErrChecksumMismatch, strings.Repeat("é", 5000)))
	for _, r := range []Report{ok, refused} {
		line := r.Line()
		if strings.Count(line, "\n") != 1 || len(line) > 4096 {
			t.Fatalf("report is not one line within the termination message's 4096 bytes: %d bytes", len(line))
		}
		got, err := ParseReport(line)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("ParseReport(%q) = %+v, %v", line, got, err)
		}
	}
	if refused.Result != (Result{}) || refused.Outcome != report.Refused || refused.Reason != ReasonArtifactChanged {
		t.Fatalf("a refusal reports %+v", refused)
	}
	for _, bad := range []string{
		"", "panic: runtime error", `{"outcome":"Staged","reason":"Staged"}`,
		`{"outcome":"Maybe","reason":"Transient"}`, `{"outcome":"Refused"}`,
		`{"outcome":"Refused","reason":"ArtifactChanged","extra":1}`,
		ok.Line() + ok.Line(),
		ok.Line()[:40],
	} {
		if r, err := ParseReport(bad); err == nil {
			t.Errorf("ParseReport(%q) = %+v, want an error", bad, r)
		}
	}
}

// Main against a real S3 server: stages the object, writes the report and
// exits 0; refuses a missing object with report.ExitRefused; retries wrong keys.
func TestMainAgainstS3(t *testing.T) {
	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	snap := boltSnapshot(t, 300)
	up, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.PutObject(ctx, "bkt", "t/etcd/s.db", bytes.NewReader(snap), int64(len(snap)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := Options{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/s.db", PathStyle: true, Size: int64(len(snap)), SHA256: hexSum(snap),
		RevisionFloor: 1000, Out: filepath.Join(dir, "staged.db"), AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true,
		TerminationLog: filepath.Join(dir, "termination-log")}
	env := func(keys s3server.Credentials) func(string) string {
		return func(k string) string {
			return map[string]string{s3object.AccessKeyIDKey: keys.AccessKeyID, s3object.SecretAccessKeyKey: keys.SecretAccessKey}[k]
		}
	}
	run := func(o Options, keys s3server.Credentials) (int, Report) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := Main(ctx, o.Args(), env(keys), &stdout, &stderr)
		msg, err := os.ReadFile(o.TerminationLog)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseReport(string(msg))
		if err != nil {
			t.Fatalf("%v (stderr: %s)", err, stderr.String())
		}
		if stdout.String() != string(msg) {
			t.Fatalf("stdout %q differs from the termination log %q", stdout.String(), msg)
		}
		return code, r
	}

	code, r := run(o, creds)
	if code != report.ExitSucceeded || r.Outcome != OutcomeStaged || r.Revision != 1000+DefaultMargin || r.SnapshotRevision != 300 {
		t.Fatalf("exit %d, report %+v", code, r)
	}
	if latest, compacted := readStaged(t, o.Out, r.Result); latest != r.Revision || compacted != r.Revision {
		t.Fatalf("staged file at %d compacted %d, report says %d", latest, compacted, r.Revision)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		keys   s3server.Credentials
		exit   int
		reason report.Reason
	}{
		{"missing object", func(o *Options) { o.Key = "t/etcd/none.db" }, creds, report.ExitRefused, ReasonArtifactMissing},
		{"other size recorded", func(o *Options) { o.Size += 512 }, creds, report.ExitRefused, ReasonArtifactChanged},
		{"other checksum recorded", func(o *Options) { o.SHA256 = strings.Repeat("0", 64) }, creds, report.ExitRefused, ReasonArtifactChanged},
		{"wrong keys", func(*Options) {}, s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "wrong"}, report.ExitRetryable, ReasonCredentialsRejected},
		{"no keys", func(*Options) {}, s3server.Credentials{}, report.ExitRetryable, ReasonCredentialsRejected},
		{"loopback not allowed", func(o *Options) { o.AllowedEndpointCIDRs = nil }, creds, report.ExitRefused, ReasonEndpointRefused},
		{"http not allowed", func(o *Options) { o.AllowHTTP = false }, creds, report.ExitRefused, ReasonEndpointRefused},
		{"both floor and bump", func(o *Options) { o.BumpRevision = 1 }, creds, report.ExitRefused, ReasonInvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			o.Out = filepath.Join(t.TempDir(), "staged.db")
			tc.mutate(&o)
			code, r := run(o, tc.keys)
			if code != tc.exit || r.Reason != tc.reason || r.Message == "" {
				t.Fatalf("exit %d, report %+v; want exit %d, %s", code, r, tc.exit, tc.reason)
			}
			if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
				t.Fatalf("a failed run left %s: %v", o.Out, err)
			}
		})
	}
}
