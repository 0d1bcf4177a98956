package step

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

const prefix = "tenant-a/etcd"

var s3creds = s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}

// startEtcd runs a real etcd (bin/etcd) with extra flags ("{client}" in
// one stands for the plain client URL) and returns that URL and a client.
func startEtcd(_ context.Context, t testing.TB, flags ...string) (string, *clientv3.Client) {
	cli, url := testenv.StartEtcd(t, flags...)
	return url, cli
}

// startS3 runs the sandbox's S3 server with bucket "bkt".
func startS3(t testing.TB) string {
	t.Helper()
	srv, err := s3server.Start(t.TempDir(), s3creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv.URL
}

// base takes a real snapshot of the etcd as a base Backup would be: its
// revision and sha256, and the file.
func base(ctx context.Context, t testing.TB, cli *clientv3.Client) (changelog.Base, string) {
	t.Helper()
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot is of the revision current when it was taken: nothing
	// writes meanwhile in these tests.
	st, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "base.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return changelog.Base{Revision: st.Header.Revision, SHA256: hex.EncodeToString(sum[:])}, path
}

func options(etcdURL, s3URL string, b changelog.Base, dir string) capture.Options {
	return capture.Options{
		EtcdEndpoints: []string{etcdURL}, Endpoint: s3URL, Bucket: "bkt", PathStyle: true,
		AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true, Prefix: prefix, Base: b,
		SegmentInterval: time.Second, SegmentBytes: capture.MinSegmentBytes,
		TerminationLog: filepath.Join(dir, "termination-log"),
	}
}

func env(name string) string {
	switch name {
	case s3object.AccessKeyIDKey:
		return s3creds.AccessKeyID
	case s3object.SecretAccessKeyKey:
		return s3creds.SecretAccessKey
	}
	return ""
}

// running is a capture started with Main in the test's process.
type running struct {
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuffer
	o      capture.Options
}

// startCapture runs `etcd-stage capture` with o until stop (SIGTERM's
// context) or its own end.
func startCapture(t testing.TB, o capture.Options) *running {
	return startCaptureEnv(t, o, env)
}

// startCaptureEnv is startCapture with the environment env.
func startCaptureEnv(t testing.TB, o capture.Options, env func(string) string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}, o: o}
	go func() { r.done <- Main(ctx, o.Args(), env, io.Discard, r.stderr) }()
	t.Cleanup(func() { cancel(); <-r.done; r.done <- 0 })
	return r
}

// stop ends the capture as SIGTERM does and returns its exit code and
// report.
func (r *running) stop(t testing.TB) (int, capture.Report) {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// wait waits for the capture to end by itself.
func (r *running) wait(t testing.TB) (int, capture.Report) {
	t.Helper()
	code := <-r.done
	r.done <- code
	b, err := os.ReadFile(r.o.TerminationLog)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := capture.ParseReport(string(b))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	if rep.ExitCode() != code {
		t.Fatalf("exit code %d with report %+v", code, rep)
	}
	return code, rep
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// storeOf is the chain o writes, as a reader reaches it.
func storeOf(t testing.TB, o capture.Options) changelog.Store {
	t.Helper()
	policy, err := endpointpolicy.Parse(o.AllowedEndpointCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	return changelog.Store{S3: s3object.Store{Policy: policy, AllowHTTP: true},
		Creds:  s3object.Credentials{AccessKeyID: s3creds.AccessKeyID, SecretAccessKey: s3creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: o.Endpoint, Bucket: o.Bucket, ForcePathStyle: true},
		Chain:  changelog.ChainPrefix(o.Prefix, o.Base.Revision), Limits: changelog.DefaultLimits}
}

// awaitDurable waits until the chain's index holds revision rev (the
// capture cuts a segment every second in these tests).
func awaitDurable(ctx context.Context, t testing.TB, s changelog.Store, rev int64, r *running) changelog.Index {
	t.Helper()
	for {
		idx, err := s.ReadIndex(ctx)
		if err == nil && idx.Newest.Revision >= rev {
			return idx
		}
		if err != nil && !errors.Is(err, changelog.ErrNoIndex) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("revision %d never became durable (%v); capture said:\n%s", rev, ctx.Err(), r.stderr)
		case code := <-r.done:
			r.done <- code
			t.Fatalf("the capture ended (exit %d) before revision %d was durable:\n%s", code, rev, r.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// change is one revision as the tests compare it, without holding its
// values: its number, how many events it holds and a digest of them
// (type, key, value and lease of each, in order).
type change struct {
	rev    int64
	events int
	sum    [sha256.Size]byte
	first  string // the first event's key, for messages
}

func digest(rev int64, evs []changelog.Event) change {
	h := sha256.New()
	for _, ev := range evs {
		fmt.Fprintf(h, "%d %d %q %d %d ", ev.Type, len(ev.Key), ev.Key, len(ev.Value), ev.Lease)
		h.Write(ev.Value)
	}
	c := change{rev: rev, events: len(evs), first: string(evs[0].Key)}
	copy(c.sum[:], h.Sum(nil))
	return c
}

// chainRevisions fetches and verifies the whole chain and returns its
// revisions.
func chainRevisions(ctx context.Context, t testing.TB, s changelog.Store) (changelog.Index, []change) {
	t.Helper()
	idx, err := s.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Fetch(ctx, idx, func(changelog.Header) bool { return true }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []change
	for _, seg := range c.Segments {
		f, err := os.Open(seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := changelog.NewReader(f, changelog.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rv, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, digest(rv.Revision, rv.Events))
		}
		f.Close()
	}
	return idx, out
}

// reference is what an independent clientv3 watch of the same etcd saw,
// revision by revision: the truth the chain is compared with.
type reference struct {
	mu      sync.Mutex
	changes []change
}

func watchReference(ctx context.Context, t testing.TB, cli *clientv3.Client, from int64) *reference {
	ref := &reference{}
	ch := cli.Watch(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(from))
	go func() {
		for resp := range ch {
			// A response holds whole revisions.
			var evs []changelog.Event
			for i, ev := range resp.Events {
				e := changelog.Event{Type: changelog.Put, Key: ev.Kv.Key, Value: ev.Kv.Value, Lease: ev.Kv.Lease}
				if ev.Type == mvccpb.Event_DELETE {
					e = changelog.Event{Type: changelog.Delete, Key: ev.Kv.Key}
				}
				evs = append(evs, e)
				if i == len(resp.Events)-1 || resp.Events[i+1].Kv.ModRevision != ev.Kv.ModRevision {
					ref.mu.Lock()
					ref.changes = append(ref.changes, digest(ev.Kv.ModRevision, evs))
					ref.mu.Unlock()
					evs = nil
				}
			}
		}
	}()
	return ref
}

// upTo is the reference's revisions up to rev, waiting for them.
func (ref *reference) upTo(ctx context.Context, t testing.TB, rev int64) []change {
	for {
		ref.mu.Lock()
		n := len(ref.changes)
		if n > 0 && ref.changes[n-1].rev >= rev {
			out := append([]change(nil), ref.changes...)
			ref.mu.Unlock()
			return out
		}
		ref.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("the reference watch never reached revision %d", rev)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sameChanges fails unless got holds exactly want's revisions, each
// with the same events in the same order.
func sameChanges(t testing.TB, got, want []change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the chain holds %d revisions, the etcd made %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("revision %d: the chain holds %d events from %q, the etcd made revision %d of %d events from %q (or their contents differ)",
				got[i].rev, got[i].events, got[i].first, want[i].rev, want[i].events, want[i].first)
		}
	}
}

// revision is the etcd's current revision.
func revision(ctx context.Context, t testing.TB, cli *clientv3.Client) int64 {
	t.Helper()
	r, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

func key(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return "/registry/" + strings.Join(s, "/")
}
