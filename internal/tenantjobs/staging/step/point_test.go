package step_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	pointrun "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay/run"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// With a point, Main stages the base replayed to the point and raised
// above the floor: the namespace created before the point is there, the
// one created after it is not, and the staged file restores above the
// live revision with everything below compacted. A segment corrupted or
// swapped in S3 ends it refused, naming the chain's fault, with nothing
// staged.
func TestMainStagesTheSnapshotAtThePoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, _ := testenv.StartEtcd(t)
	if _, err := cli.Put(ctx, "/registry/namespaces/kept", "k"); err != nil {
		t.Fatal(err)
	}
	snap, base := pointchain.Snapshot(ctx, t, cli)

	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	policy, err := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	s3c := s3object.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}
	bucket := s3object.Location{Endpoint: srv.URL, Bucket: "bkt", ForcePathStyle: true}
	s3 := s3object.Store{Policy: policy, AllowHTTP: true}
	key := "team-a/etcd/night.db"
	loc := bucket
	loc.Key = key
	if err := s3.Put(ctx, loc, s3c, bytes.NewReader(snap), int64(len(snap)), nil); err != nil {
		t.Fatal(err)
	}
	chain := changelog.ChainPrefix("team-a/etcd", base.Revision)
	store := changelog.Store{S3: s3, Creds: s3c, Bucket: bucket, Chain: chain}
	r, t0 := base.Revision, time.Now().Add(-time.Hour)
	segs := pointchain.Upload(ctx, t, store, base,
		[]changelog.Revision{pointchain.Put(r+1, t0, "/registry/namespaces/before", "b")},
		[]changelog.Revision{pointchain.Put(r+2, t0.Add(time.Minute), "/registry/namespaces/after", "a")})

	dir := t.TempDir()
	o := step.Options{Endpoint: srv.URL, Bucket: "bkt", Key: key, PathStyle: true, Size: int64(len(snap)), SHA256: base.SHA256,
		RevisionFloor: 5000, Out: filepath.Join(dir, "restore.db"), AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true,
		TerminationLog: filepath.Join(dir, "termination-log"),
		Point:          pointreplay.Point{Chain: chain, Base: base, Target: changelog.Target{Time: t0.Add(30 * time.Second)}}}
	env := func(k string) string {
		return map[string]string{s3object.AccessKeyIDKey: creds.AccessKeyID, s3object.SecretAccessKeyKey: creds.SecretAccessKey}[k]
	}
	run := func(o step.Options) (int, step.Report) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := step.MainWith(ctx, o.Args(), env, &stdout, &stderr, pointrun.Staging)
		rep, err := step.ParseReport(stdout.String())
		if err != nil {
			t.Fatalf("%v (stderr: %s)", err, stderr.String())
		}
		return code, rep
	}

	code, rep := run(o)
	if code != report.ExitSucceeded || rep.Point == nil || rep.Point.Revision != r+1 || rep.SnapshotRevision != r+1 || rep.Revision != 5000+step.DefaultMargin {
		t.Fatalf("exit %d, report %+v (point %+v)", code, rep, rep.Point)
	}
	if latest, compacted := step.ReadStaged(t, o.Out, rep.Result); latest != rep.Revision || compacted != rep.Revision {
		t.Fatalf("staged at %d compacted %d, report says %d", latest, compacted, rep.Revision)
	}
	kvs, _ := pointchain.Keys(t, o.Out)
	var got []string
	for k := range kvs {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "/registry/namespaces/before,/registry/namespaces/kept" {
		t.Fatalf("the staged snapshot holds %v", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 2 {
		t.Fatalf("the staging folder holds %d files, want the staged file and the report", len(left))
	}

	for _, tc := range []struct {
		name   string
		break_ func()
		want   report.Reason
	}{
		{"a corrupted segment", func() {
			bad := append([]byte(nil), segs[0].Data...)
			bad[len(bad)-2] ^= 1
			pointchain.Replace(ctx, t, store, segs[0].Key, bad, pointchain.SHA256(segs[0].Data))
		}, pointreplay.ReasonChainChecksum},
		{"two segments swapped", func() {
			pointchain.Replace(ctx, t, store, segs[0].Key, segs[1].Data, pointchain.SHA256(segs[1].Data))
			pointchain.Replace(ctx, t, store, segs[1].Key, segs[0].Data, pointchain.SHA256(segs[0].Data))
		}, pointreplay.ReasonChainOutOfOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.break_()
			o := o
			o.Out = filepath.Join(t.TempDir(), "restore.db")
			code, rep := run(o)
			if code != report.ExitRefused || rep.Reason != tc.want || rep.Outcome != report.Refused {
				t.Fatalf("exit %d, report %+v; want exit %d, %s", code, rep, report.ExitRefused, tc.want)
			}
			if left, _ := os.ReadDir(filepath.Dir(o.Out)); len(left) != 0 {
				t.Fatalf("a refused run left %d files", len(left))
			}
			t.Log(rep.Message)
		})
	}
}
