package step

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	bolt "go.etcd.io/bbolt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

func TestArgsRoundTrip(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, o := range []Options{
		{Source: stagingstep.Source{Endpoint: "https://s3.example.com", Bucket: "b", Key: "t/etcd/a b.db", Size: 4128, SHA256: sum}, WorkDir: "/work"},
		{Source: stagingstep.Source{Endpoint: "http://10.0.0.1:9000", Bucket: "b", Key: "k", Region: "eu-1", PathStyle: true, Size: 4128, SHA256: sum,
			AllowedEndpointCIDRs: []string{"10.0.0.0/8", "127.0.0.0/8"}, AllowHTTP: true}, WorkDir: "/w", TerminationLog: "/tmp/log"},
	} {
		args := o.Args()
		if args[0] != Subcommand {
			t.Fatalf("Args %q do not start with the subcommand", args)
		}
		got, err := Parse(args[1:], &bytes.Buffer{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", args, err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, o)
		}
	}
	base := Options{Source: stagingstep.Source{Endpoint: "https://s3", Bucket: "b", Key: "k", Size: 4128, SHA256: sum}, WorkDir: "/w"}
	for name, mutate := range map[string]func(*Options){
		"no key":         func(o *Options) { o.Key = "" },
		"no work dir":    func(o *Options) { o.WorkDir = "" },
		"short checksum": func(o *Options) { o.SHA256 = "abc" },
		"size of no db":  func(o *Options) { o.Size = 32 },
	} {
		o := base
		mutate(&o)
		if _, err := Parse(o.Args()[1:], &bytes.Buffer{}); !errors.Is(err, stagingstep.ErrArguments) {
			t.Errorf("%s: Parse = %v, want ErrArguments", name, err)
		}
	}
}

// TestMainAgainstS3 runs `etcd-stage inspect` against a real S3 server on
// a real etcd's snapshot: the report carries the manifest InspectFile
// reads from the same bytes and exit 0; a changed object, a missing one
// and a database that is not etcd's (with an intact trailer) are refused
// with ExitRefused, wrong keys retried; no run leaves a file in the work
// dir.
func TestMainAgainstS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := startEtcd(t)
	for _, k := range []string{"/registry/namespaces/default", "/registry/namespaces/a", "/registry/pods/a/p1", "/registry/minions/n1"} {
		if _, err := cli.Put(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	db := saveDatabase(ctx, t, cli, dir)
	want, err := InspectFile(db)
	if err != nil {
		t.Fatal(err)
	}
	snap := withTrailer(t, db)
	corrupt := filepath.Join(dir, "corrupt.db")
	copyFile(t, db, corrupt)
	b, err := bolt.Open(corrupt, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("key")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 99, '_', 0, 0, 0, 0, 0, 0, 0, 0}, []byte("\xff\xffnot a KeyValue"))
	}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	bad := withTrailer(t, corrupt)

	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	up, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string][]byte{"t/etcd/s.db": snap, "t/etcd/bad.db": bad} {
		if _, err := up.PutObject(ctx, "bkt", key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Source: stagingstep.Source{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/s.db", PathStyle: true, Size: int64(len(snap)), SHA256: hexSum(snap),
		AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true}}
	run := func(o Options, keys s3server.Credentials) (int, Report) {
		t.Helper()
		o.WorkDir = t.TempDir()
		o.TerminationLog = filepath.Join(t.TempDir(), "termination-log")
		env := map[string]string{s3object.AccessKeyIDKey: keys.AccessKeyID, s3object.SecretAccessKeyKey: keys.SecretAccessKey}
		var stdout, stderr bytes.Buffer
		code := Main(ctx, o.Args()[1:], func(k string) string { return env[k] }, &stdout, &stderr)
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
		if left, _ := os.ReadDir(o.WorkDir); len(left) != 0 {
			t.Fatalf("the run left %d files in the work dir", len(left))
		}
		return code, r
	}

	code, r := run(o, creds)
	if code != report.ExitSucceeded || r.Outcome != OutcomeInspected || r.Manifest == nil || !reflect.DeepEqual(*r.Manifest, want) {
		t.Fatalf("exit %d, report %+v; want the manifest %+v", code, r, want)
	}
	if want.Keys != 4 || len(want.Keyspaces) != 1 || want.Keyspaces[0].Namespaces != 2 {
		t.Fatalf("InspectFile read %+v", want)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		keys   s3server.Credentials
		exit   int
		reason report.Reason
	}{
		{"not etcd's database", func(o *Options) { o.Key, o.Size, o.SHA256 = "t/etcd/bad.db", int64(len(bad)), hexSum(bad) }, creds, report.ExitRefused, stagingstep.ReasonArtifactCorrupt},
		{"other checksum recorded", func(o *Options) { o.SHA256 = strings.Repeat("0", 64) }, creds, report.ExitRefused, stagingstep.ReasonArtifactChanged},
		{"other size recorded", func(o *Options) { o.Size += 512 }, creds, report.ExitRefused, stagingstep.ReasonArtifactChanged},
		{"missing object", func(o *Options) { o.Key = "t/etcd/none.db" }, creds, report.ExitRefused, stagingstep.ReasonArtifactMissing},
		{"wrong keys", func(*Options) {}, s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "wrong"}, report.ExitRetryable, stagingstep.ReasonCredentialsRejected},
		{"loopback not allowed", func(o *Options) { o.AllowedEndpointCIDRs = nil }, creds, report.ExitRefused, stagingstep.ReasonEndpointRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			tc.mutate(&o)
			code, r := run(o, tc.keys)
			if code != tc.exit || r.Reason != tc.reason || r.Message == "" || r.Manifest != nil {
				t.Fatalf("exit %d, report %+v; want exit %d, %s", code, r, tc.exit, tc.reason)
			}
		})
	}
}

// withTrailer is the database at path followed by etcd's trailer (its
// sha256), as a stored snapshot is.
func withTrailer(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
