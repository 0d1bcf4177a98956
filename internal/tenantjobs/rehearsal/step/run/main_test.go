package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	clientv3 "go.etcd.io/etcd/client/v3"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// kubeSnapshot is a snapshot of a real etcd (bin/etcd) holding a
// Kubernetes keyspace: namespaces a, b and c, pods and configmaps in them,
// a cluster-scoped node, and one key deleted after it was written. It
// returns the snapshot's bytes and its revision.
func kubeSnapshot(ctx context.Context, t *testing.T) ([]byte, int64) {
	t.Helper()
	cli, _ := testenv.StartEtcd(t)
	put := func(k string) {
		if _, err := cli.Put(ctx, k, "{}"); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"a", "b", "c"} {
		put("/registry/namespaces/" + ns)
		for i := range 3 {
			put(fmt.Sprintf("/registry/pods/%s/p%d", ns, i))
		}
		put("/registry/configmaps/" + ns + "/cm")
	}
	put("/registry/minions/node-1")
	put("/registry/pods/a/gone")
	if _, err := cli.Delete(ctx, "/registry/pods/a/gone"); err != nil {
		t.Fatal(err)
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cli.Get(ctx, "x", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return b, st.Header.Revision
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The rehearsal against a real S3 server and a snapshot of a real etcd:
// it stages, boots and reads back, reporting the staged revision, the key
// count and the Kubernetes counts; corrupted objects are refused with the
// reason a real restore would give; the work directory is left empty.
func TestRehearseAgainstS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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
	upload := func(key string, b []byte) {
		if _, err := up.PutObject(ctx, "bkt", key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, rev := kubeSnapshot(ctx, t)
	upload("t/etcd/s.db", snap)
	// Flipped bytes in the database, uploaded over another key: once with
	// the recorded facts of the good snapshot (changed since the backup),
	// once with its own size and sha256 (etcd's trailer no longer
	// matches: corrupt).
	bad := bytes.Clone(snap)
	for i := 4096; i < 4096+64; i++ {
		bad[i] ^= 0xff
	}
	upload("t/etcd/bad.db", bad)

	env := func(k string) string {
		return map[string]string{s3object.AccessKeyIDKey: creds.AccessKeyID, s3object.SecretAccessKeyKey: creds.SecretAccessKey}[k]
	}
	base := func(t *testing.T) step.Options {
		dir := t.TempDir()
		return step.Options{WorkDir: filepath.Join(dir, "work"), Staging: stagingstep.Options{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/s.db",
			PathStyle: true, Size: int64(len(snap)), SHA256: hexSum(snap), BumpRevision: 10000,
			AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true, TerminationLog: filepath.Join(dir, "termination-log")}}
	}
	run := func(t *testing.T, o step.Options) (int, step.Report) {
		t.Helper()
		if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := Main(ctx, append([]string{}, o.Args()...), env, &stdout, &stderr)
		msg, err := os.ReadFile(o.Staging.TerminationLog)
		if err != nil {
			t.Fatal(err)
		}
		r, err := step.ParseReport(string(msg))
		if err != nil {
			t.Fatalf("%v (stderr: %s)", err, stderr.String())
		}
		if stdout.String() != string(msg) {
			t.Fatalf("stdout %q differs from the termination log %q", stdout.String(), msg)
		}
		if left, _ := os.ReadDir(o.WorkDir); len(left) != 0 {
			t.Fatalf("the work directory still holds %v", left)
		}
		t.Logf("exit %d: %s", code, msg)
		return code, r
	}

	t.Run("rehearsed", func(t *testing.T) {
		code, r := run(t, base(t))
		if code != report.ExitSucceeded || r.Outcome != step.OutcomeRehearsed || r.Reason != step.ReasonRehearsed {
			t.Fatalf("exit %d, report %+v", code, r)
		}
		if r.Revision != rev+10000 || r.CompactedRevision != rev+10000 {
			t.Fatalf("read back at revision %d compacted %d, want both %d (snapshot at %d, bump 10000)", r.Revision, r.CompactedRevision, rev+10000, rev)
		}
		// 3 namespaces, 9 pods, 3 configmaps, 1 node: the deleted pod is gone.
		if r.Keys != 16 {
			t.Fatalf("read back %d keys, want 16", r.Keys)
		}
		if len(r.Keyspaces) != 1 || r.Keyspaces[0].Prefix != "/registry" {
			t.Fatalf("keyspaces %+v, want /registry alone", r.Keyspaces)
		}
		k := r.Keyspaces[0]
		if k.Objects != 16 || k.Namespaces != 3 || !slices.Equal(sortedCopy(k.NamespaceNames), []string{"a", "b", "c"}) {
			t.Fatalf("keyspace %+v", k)
		}
		if c := countOf(k.Resources, "pods"); c != 9 {
			t.Fatalf("pods %d, want 9 (%+v)", c, k.Resources)
		}
	})

	for _, tc := range []struct {
		name   string
		mutate func(*step.Options)
		exit   int
		reason report.Reason
	}{
		{"changed since the backup", func(o *step.Options) { o.Staging.Key = "t/etcd/bad.db" }, report.ExitRefused, stagingstep.ReasonArtifactChanged},
		{"corrupt", func(o *step.Options) { o.Staging.Key, o.Staging.SHA256 = "t/etcd/bad.db", hexSum(bad) }, report.ExitRefused, stagingstep.ReasonArtifactCorrupt},
		{"missing", func(o *step.Options) { o.Staging.Key = "t/etcd/none.db" }, report.ExitRefused, stagingstep.ReasonArtifactMissing},
		{"loopback not allowed", func(o *step.Options) { o.Staging.AllowedEndpointCIDRs = nil }, report.ExitRefused, stagingstep.ReasonEndpointRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base(t)
			tc.mutate(&o)
			code, r := run(t, o)
			if code != tc.exit || r.Reason != tc.reason || r.Outcome != report.Refused || !strings.HasPrefix(r.Message, "staging: ") {
				t.Fatalf("exit %d, report %+v; want exit %d, %s", code, r, tc.exit, tc.reason)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func countOf(cs []driverv1alpha1.ObjectCount, name string) int64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Count
		}
	}
	return -1
}
