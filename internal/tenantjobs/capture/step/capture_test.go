package step

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// With a real etcd written by many writers at once (transactions of
// several keys, deletes, range deletes, leased keys and revocations, a
// compaction after the capture passed it), every committed revision
// lands in exactly one segment, in order, with its events together and
// as the etcd sent them to an independent watch; SIGTERM ends the
// capture with everything durable.
func TestEveryRevisionLandsOnceInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	workload(ctx, t, cli, "before", 2, 20)
	b, _ := base(ctx, t, cli)
	ref := watchReference(ctx, t, cli, b.Revision+1)
	o := options(etcdURL, s3URL, b, t.TempDir())
	store := storeOf(t, o)
	r := startCapture(t, o)

	workload(ctx, t, cli, "one", 8, 60)
	mid := revision(ctx, t, cli)
	awaitDurable(ctx, t, store, mid, r)
	if _, err := cli.Compact(ctx, mid); err != nil {
		t.Fatal(err)
	}
	workload(ctx, t, cli, "two", 8, 60)
	final := revision(ctx, t, cli)
	awaitDurable(ctx, t, store, final, r)

	code, rep := r.stop(t)
	if code != capture.ExitStopped || rep.Outcome != capture.OutcomeStopped || rep.Newest != final {
		t.Fatalf("exit %d, report %+v; want Stopped at revision %d\n%s", code, rep, final, r.stderr)
	}
	idx, got := chainRevisions(ctx, t, store)
	sameChanges(t, got, ref.upTo(ctx, t, final))
	if idx.Segments < 4 || idx.Gap != nil {
		t.Fatalf("index %+v: want several segments and no gap", idx)
	}
	t.Logf("%d revisions after base %d in %d segments", len(got), b.Revision, idx.Segments)
}

// SIGTERM makes durable what the capture held whole: with segments cut
// only every ten minutes, the revisions received end up in one last
// segment when the capture is told to stop.
func TestSIGTERMFlushesWhatWasReceived(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	ref := watchReference(ctx, t, cli, b.Revision+1)
	o := options(etcdURL, s3URL, b, t.TempDir())
	o.SegmentInterval, o.SegmentBytes = capture.MaxSegmentInterval, capture.MaxSegmentBytes

	c, err := newCapturer(o, env, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cli.Close()
	var received atomic.Int64
	c.received = func(rev int64) { received.Store(rev) }
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.run(cctx) }()

	workload(ctx, t, cli, "one", 4, 30)
	final := revision(ctx, t, cli)
	for received.Load() < final {
		select {
		case <-ctx.Done():
			t.Fatalf("the capture received revisions up to %d of %d", received.Load(), final)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if idx, err := storeOf(t, o).ReadIndex(ctx); err == nil && idx.Segments > 0 {
		t.Fatalf("a segment was cut before the stop: %+v", idx)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("stopped with %v", err)
	}
	idx, got := chainRevisions(ctx, t, storeOf(t, o))
	sameChanges(t, got, ref.upTo(ctx, t, final))
	if idx.Segments != 1 {
		t.Fatalf("%d segments, want the one flushed at the stop", idx.Segments)
	}
}

// A capture stopped while the etcd is written, and one that crashed
// after storing segments but before its index named them, resume from
// the index: the chain ends up holding every revision once.
func TestRestartContinuesWithoutLossOrDuplicate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	ref := watchReference(ctx, t, cli, b.Revision+1)
	o := options(etcdURL, s3URL, b, t.TempDir())
	store := storeOf(t, o)

	writing := make(chan struct{})
	go func() { defer close(writing); workload(ctx, t, cli, "during", 4, 150) }()
	first := startCapture(t, o)
	early := awaitDurable(ctx, t, store, b.Revision+1, first)
	// Stopped mid-flight, with the writers still at it.
	awaitDurable(ctx, t, store, early.Newest.Revision+1, first)
	code, rep := first.stop(t)
	if code != capture.ExitStopped {
		t.Fatalf("first capture: exit %d, %+v", code, rep)
	}
	stopped, err := store.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := startCapture(t, o)
	later := awaitDurable(ctx, t, store, revision(ctx, t, cli), second)
	if code, _ := second.stop(t); code != capture.ExitStopped {
		t.Fatalf("second capture: exit %d\n%s", code, second.stderr)
	}
	if later.Segments < early.Segments+2 {
		t.Fatalf("index went from %d to %d segments; want a crash to leave some unnamed", early.Segments, later.Segments)
	}
	// The second capture went on after the newest durable segment the
	// first left, leaving it as it was.
	keptAfter(ctx, t, store, stopped.Head)
	// A crash after storing segments but before naming them: the index
	// goes back to an older one; the segments after it are left behind.
	if err := store.PutIndex(ctx, early); err != nil {
		t.Fatal(err)
	}
	third := startCapture(t, o)
	<-writing
	final := revision(ctx, t, cli)
	awaitDurable(ctx, t, store, final, third)
	if code, _ := third.stop(t); code != capture.ExitStopped {
		t.Fatalf("third capture: exit %d\n%s", code, third.stderr)
	}
	_, got := chainRevisions(ctx, t, store)
	sameChanges(t, got, ref.upTo(ctx, t, final))
	keptAfter(ctx, t, store, early.Head)
}

// keptAfter fails unless the chain's segment h describes is still the
// one h names: a capture resumed after it instead of capturing again.
func keptAfter(ctx context.Context, t *testing.T, store changelog.Store, h *changelog.Head) {
	t.Helper()
	idx, err := store.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Fetch(ctx, idx, func(changelog.Header) bool { return true }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Segments[h.Seq].SHA256; got != h.SHA256 {
		t.Fatalf("segment %d was rewritten after a restart: sha256 %s, was %s", h.Seq, got, h.SHA256)
	}
}

// SIGTERM while an upload is held up: the upload is given up with the
// capture's context and made again with the flush's own, so what was
// received still becomes durable once S3 answers.
func TestSIGTERMDuringAnUpload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	gate := holdable(t, s3URL)
	b, _ := base(ctx, t, cli)
	ref := watchReference(ctx, t, cli, b.Revision+1)
	o := options(etcdURL, gate.URL, b, t.TempDir())
	o.SegmentInterval = capture.MaxSegmentInterval
	c, err := newCapturer(o, env, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cli.Close()
	var received atomic.Int64
	c.received = func(rev int64) { received.Store(rev) }
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.run(cctx) }()
	await := func(what string, ok func() bool) {
		for !ok() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s", what)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	workload(ctx, t, cli, "small", 1, 10)
	await("the small changes", func() bool { return received.Load() == revision(ctx, t, cli) })
	// Held up: the next change fills the segment, whose upload waits.
	gate.hold()
	before := gate.arrived.Load()
	if _, err := cli.Put(ctx, "/registry/configmaps/big", strings.Repeat("b", 100<<10)); err != nil {
		t.Fatal(err)
	}
	final := revision(ctx, t, cli)
	await("the upload", func() bool { return received.Load() == final && gate.arrived.Load() > before })
	stop()
	// The flush's upload arrives too, and waits.
	await("the flush's upload", func() bool { return gate.arrived.Load() > before+1 })
	gate.release()
	if err := <-done; err != nil {
		t.Fatalf("stopped with %v", err)
	}
	direct := o
	direct.Endpoint = s3URL
	_, got := chainRevisions(ctx, t, storeOf(t, direct))
	sameChanges(t, got, ref.upTo(ctx, t, final))
}
