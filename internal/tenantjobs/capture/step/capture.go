package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// Pacing of the capture.
const (
	// confirmEvery spaces the index rewrites that only confirm a quiet
	// etcd (at most one a minute per tenant).
	confirmEvery = time.Minute
	// flushTimeout bounds the last upload after SIGTERM (Kubernetes
	// grants 30 s by default).
	flushTimeout = 20 * time.Second
	// maxNoted bounds the set of leases already noted.
	maxNoted = 8192
)

// gapError ends the chain.
type gapError struct {
	reason report.Reason
	err    error
}

func (e *gapError) Error() string { return e.err.Error() }
func (e *gapError) Unwrap() error { return e.err }

func gap(reason report.Reason, format string, args ...any) error {
	return &gapError{reason: reason, err: fmt.Errorf(format, args...)}
}

// storeError is a failure to make the chain durable: the capture exits
// (a restart resumes from the index) rather than hold more.
type storeError struct{ err error }

func (e storeError) Error() string { return e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// errChainMismatch: the store's index is not one this capture may
// continue.
var errChainMismatch = errors.New("the chain's index does not fit the arguments")

// capturer follows one etcd into one chain.
type capturer struct {
	o     capture.Options
	cli   *clientv3.Client
	store changelog.Store
	lim   changelog.Limits
	now   func() time.Time
	log   io.Writer

	idx     changelog.Index   // as last written (or read)
	w       *changelog.Writer // nil until the etcd's cluster ID is known
	cluster uint64
	open    int64 // the revision being received, 0 when none
	cut     *time.Timer
	cutDue  bool
	noted   map[int64]struct{}
	noting  []int64 // leases noted in the open revision
	written time.Time
	// received, when set (by tests), hears each revision held whole.
	received func(rev int64)
	retry    watchRetry
	// rec tells the driver the chain's progress (nil: no record).
	rec *progressWriter
}

// watchRetry is how the capture rides out a broken watch.
type watchRetry struct {
	// create bounds the wait for the etcd to create a watch.
	create time.Duration
	// failures is how often in a row the watch may break without a
	// revision received before the capture gives up (a restart of the
	// Pod tries again, and shows the failure meanwhile).
	failures int
	// wait is the pause after the nth failure.
	wait func(n int) time.Duration
}

// defaultWatchRetry gives up after about five minutes of an etcd that
// cannot be followed (eight failures, each up to 15 s, and the pauses).
var defaultWatchRetry = watchRetry{create: 15 * time.Second, failures: 8,
	wait: func(n int) time.Duration { return time.Duration(1<<min(n, 5)) * time.Second }}

// run captures until ctx ends (nil: everything whole is durable) or the
// chain cannot go on.
func (c *capturer) run(ctx context.Context) error {
	err := c.resume(ctx)
	if c.idx.Version != 0 {
		// The driver learns at once that this capture runs, on which
		// chain, and whether the chain had ended.
		c.rec.note(ctx, c.idx, true)
	}
	if err != nil {
		return err
	}
	failures := 0
	for {
		progressed, err := c.follow(ctx)
		var g *gapError
		var se storeError
		switch {
		case ctx.Err() != nil:
			return c.stop()
		case errors.As(err, &g):
			return c.end(ctx, g)
		case errors.As(err, &se):
			return err
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > c.retry.failures {
			return errors.Join(err, c.flush())
		}
		wait := c.retry.wait(failures)
		fmt.Fprintf(c.log, "etcd-stage capture: the watch broke (%v); again in %s\n", err, wait)
		select {
		case <-ctx.Done():
			return c.stop()
		case <-time.After(wait):
		}
	}
}

// resume reads the chain's index: a new chain starts at the base, an
// existing one after its newest durable revision.
func (c *capturer) resume(ctx context.Context) error {
	idx, err := c.store.ReadIndex(ctx)
	switch {
	case errors.Is(err, changelog.ErrNoIndex):
		c.idx = changelog.NewIndex(c.o.Base, c.now())
		return nil
	case errors.Is(err, changelog.ErrCorrupt), errors.Is(err, changelog.ErrTooLarge):
		return fmt.Errorf("%w: %w", errChainMismatch, err)
	case err != nil:
		return err
	case idx.Base != c.o.Base:
		return fmt.Errorf("%w: the index follows base %d (%s), the arguments name %d (%s)", errChainMismatch, idx.Base.Revision, idx.Base.SHA256, c.o.Base.Revision, c.o.Base.SHA256)
	case idx.Gap != nil:
		c.idx = idx
		return &gapError{reason: capture.ReasonChainEnded, err: fmt.Errorf("the chain ended at revision %d: %s: %s", idx.Newest.Revision, idx.Gap.Reason, idx.Gap.Message)}
	}
	c.idx = idx
	if idx.ClusterID != "" {
		c.cluster, _ = strconv.ParseUint(idx.ClusterID, 16, 64)
	}
	fmt.Fprintf(c.log, "etcd-stage capture: resuming chain %s after revision %d (%d segments)\n", c.store.Chain, idx.Newest.Revision, idx.Segments)
	return nil
}

// next is the revision the capture needs next.
func (c *capturer) next() int64 {
	if c.w != nil {
		return c.w.Next()
	}
	return c.idx.Newest.Revision + 1
}

// start is where the segment after the index's newest begins.
func (c *capturer) start() changelog.Start {
	s := changelog.Start{Seq: c.idx.Segments, BaseRevision: c.idx.Base.Revision, From: c.idx.Newest.Revision + 1, ClusterID: c.cluster}
	sum := c.idx.Base.SHA256
	if h := c.idx.Head; h != nil {
		sum, s.NotBefore = h.SHA256, h.ToTime
	}
	b, _ := hex.DecodeString(sum) // checked by ParseIndex or Options.Validate
	copy(s.Prev[:sha256.Size], b)
	return s
}

// follow runs one watch until it breaks, the chain cannot go on, or ctx
// ends. progressed says whether a revision was received.
func (c *capturer) follow(ctx context.Context) (progressed bool, err error) {
	w, err := openWatch(ctx, c.cli, c.next(), c.retry.create, c.now)
	if err != nil {
		return false, err
	}
	defer w.close()
	defer c.abort()
	tick := time.NewTicker(c.o.SegmentInterval)
	defer tick.Stop()
	created := false
	for {
		var cutC <-chan time.Time
		if c.cut != nil {
			cutC = c.cut.C
		}
		select {
		case <-ctx.Done():
			return progressed, ctx.Err()
		case m := <-w.msgs:
			switch {
			case m.err != nil:
				return progressed, watchError(m.err)
			case !created:
				created = true
				w.created()
				err = c.created(ctx, m)
			default:
				var n bool
				n, err = c.handle(ctx, m)
				progressed = progressed || n
			}
		case <-cutC:
			c.cut, c.cutDue = nil, true
		case <-tick.C:
			err = w.requestProgress()
			c.rec.due(ctx)
		}
		if err == nil && c.cutDue && c.open == 0 {
			err = c.seal(ctx)
		}
		if err != nil {
			return progressed, err
		}
	}
}

// watchError sorts an error of the stream: a message above the bound is
// a gap (the etcd sends what the capture will not hold), anything else a
// broken watch to open again.
func watchError(err error) error {
	if status.Code(err) == codes.ResourceExhausted {
		return gap(capture.ReasonRevisionTooLarge, "the etcd sent a watch message above %d bytes: %v", MaxMessageBytes, err)
	}
	return fmt.Errorf("watch: %w", err)
}
