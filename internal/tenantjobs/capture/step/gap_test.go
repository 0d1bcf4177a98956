package step

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// expectGap waits for the capture to end with a gap for reason and
// checks the index records a gap (for reason, unless the chain had
// already ended).
func expectGap(ctx context.Context, t *testing.T, r *running, reason report.Reason) {
	t.Helper()
	code, rep := r.wait(t)
	if code != capture.ExitGap || rep.Outcome != capture.OutcomeGap || rep.Reason != reason {
		t.Fatalf("exit %d, report %+v; want a gap for %s\n%s", code, rep, reason, r.stderr)
	}
	t.Log(rep.Message)
	idx, err := storeOf(t, r.o).ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Gap == nil || (idx.Gap.Reason != string(reason) && reason != capture.ReasonChainEnded) || idx.Newest.Revision != rep.Newest {
		t.Fatalf("index %+v after a gap for %s reported at revision %d", idx, reason, rep.Newest)
	}
}

// A watch whose start the etcd has compacted is a gap, reported as one
// and recorded in the index; a capture started again on that chain
// refuses to go on.
func TestCompactedStartIsAGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	workload(ctx, t, cli, "lost", 1, 20)
	if _, err := cli.Compact(ctx, b.Revision+10); err != nil {
		t.Fatal(err)
	}
	o := options(etcdURL, s3URL, b, t.TempDir())
	expectGap(ctx, t, startCapture(t, o), capture.ReasonCompacted)
	expectGap(ctx, t, startCapture(t, o), capture.ReasonChainEnded)
}

// A capture that falls behind (its uploads held up while the etcd is
// written) and whose next revision the etcd then compacts gets its watch
// canceled for compaction: a gap too. What it received before is durable
// and verifies.
func TestWatchCanceledForCompactionIsAGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	gate := holdable(t, s3URL)
	b, _ := base(ctx, t, cli)
	o := options(etcdURL, gate.URL, b, t.TempDir())
	r := startCapture(t, o)
	workload(ctx, t, cli, "kept", 2, 20)
	kept := revision(ctx, t, cli)
	direct := o
	direct.Endpoint = s3URL
	awaitDurable(ctx, t, storeOf(t, direct), kept, r)

	gate.hold()
	value := strings.Repeat("v", 64<<10)
	for i := range 400 {
		if _, err := cli.Put(ctx, key("configmaps", "flood", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Compact(ctx, revision(ctx, t, cli)); err != nil {
		t.Fatal(err)
	}
	gate.release()
	expectGap(ctx, t, r, capture.ReasonCompacted)
	_, got := chainRevisions(ctx, t, storeOf(t, direct))
	if n := len(got); n == 0 || got[n-1].rev < kept {
		t.Fatalf("the chain ends before revision %d, which was durable before the gap", kept)
	}
}

// An etcd that is not the cluster the chain follows (restored, or
// another) ends the chain instead of being appended to it.
func TestAnotherClusterIsAGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	otherURL, other := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	o := options(etcdURL, s3URL, b, t.TempDir())
	r := startCapture(t, o)
	workload(ctx, t, cli, "a", 1, 30)
	awaitDurable(ctx, t, storeOf(t, o), revision(ctx, t, cli), r)
	r.stop(t)
	// The other etcd is even further on: only its identity differs.
	workload(ctx, t, other, "b", 1, 80)
	o.EtcdEndpoints = []string{otherURL}
	expectGap(ctx, t, startCapture(t, o), capture.ReasonClusterChanged)
}

// A revision above the format's bound (a range of 17 MiB of keys deleted
// in one transaction) ends the chain after the revision before it.
func TestRevisionAboveTheBoundIsAGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	o := options(etcdURL, s3URL, b, t.TempDir())
	r := startCapture(t, o)
	long := strings.Repeat("k", 1000)
	for i := 0; i < 17_000; i += 100 {
		ops := make([]clientv3.Op, 0, 100)
		for j := i; j < i+100; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/huge/%s-%05d", long, j), "x"))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	before := revision(ctx, t, cli)
	if _, err := cli.Delete(ctx, "/registry/huge/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	expectGap(ctx, t, r, capture.ReasonRevisionTooLarge)
	if idx, err := storeOf(t, o).ReadIndex(ctx); err != nil || idx.Newest.Revision != before {
		t.Fatalf("index %+v (%v): want the chain to end at revision %d", idx, err, before)
	}
}

// gateProxy forwards to an S3 server and can hold every request until
// released.
type gateProxy struct {
	URL     string
	mu      sync.RWMutex
	arrived atomic.Int64
}

func holdable(t *testing.T, target string) *gateProxy {
	g := &gateProxy{}
	g.URL = proxy(t, target, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.arrived.Add(1)
			g.mu.RLock()
			defer g.mu.RUnlock()
			next.ServeHTTP(w, r)
		})
	})
	return g
}

func (g *gateProxy) hold()    { g.mu.Lock() }
func (g *gateProxy) release() { g.mu.Unlock() }

// proxy serves target's requests through wrap.
func proxy(t testing.TB, target string, wrap func(http.Handler) http.Handler) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(wrap(rp))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An etcd that cannot be reached is tried again, then reported as a
// retryable failure; the capture does not wait in silence.
func TestUnreachableEtcdIsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nowhere, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	o := options(nowhere, startS3(t), changelog.Base{Revision: 5, SHA256: strings.Repeat("0", 64)}, t.TempDir())
	c, err := newCapturer(o, env, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cli.Close()
	c.retry = watchRetry{create: 200 * time.Millisecond, failures: 2, wait: func(int) time.Duration { return 10 * time.Millisecond }}
	err = c.run(ctx)
	if outcome, reason := classify(err); outcome != report.Retryable || reason != capture.ReasonTransient || ctx.Err() != nil {
		t.Fatalf("ended with %v (%s, %s)", err, outcome, reason)
	}
	t.Log(err)
}
