package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// sealAttempts is how often an upload is tried before the capture gives
// up (about 8 s of backoff); a restart resumes from the index.
const sealAttempts = 5

// seal makes the segment durable, then the index that names it, and
// starts the next segment.
func (c *capturer) seal(ctx context.Context) error {
	seg, err := c.w.Finish()
	if err != nil {
		return err
	}
	var key string
	err = retry(ctx, func(ctx context.Context) (err error) {
		key, err = c.store.PutSegment(ctx, seg)
		return err
	})
	if err != nil {
		return storeError{err}
	}
	idx := c.idx.WithSegment(seg, key, c.now())
	if err := c.putIndex(ctx, idx); err != nil {
		return err
	}
	h := seg.Header
	fmt.Fprintf(c.log, "etcd-stage capture: segment %d durable: revisions %d..%d, %d events, %d bytes (%d before compression)\n",
		h.Seq, h.From, h.To, h.Events, len(seg.Data), h.RawBytes)
	c.w.Reset(c.start())
	c.cutDue = false
	if c.cut != nil {
		c.cut.Stop()
		c.cut = nil
	}
	return nil
}

func (c *capturer) putIndex(ctx context.Context, idx changelog.Index) error {
	if err := retry(ctx, func(ctx context.Context) error { return c.store.PutIndex(ctx, idx) }); err != nil {
		return storeError{err}
	}
	c.idx, c.written = idx, c.now()
	c.rec.note(ctx, idx, idx.Gap != nil)
	return nil
}

// progress hears that the etcd is at revision rev with nothing left to
// send: when that is the newest durable revision, the etcd was quiet
// until at, which the index says (at most every confirmEvery).
func (c *capturer) progress(ctx context.Context, rev int64, at time.Time) error {
	if c.open != 0 || c.w.Revisions() > 0 || rev != c.idx.Newest.Revision || at.Sub(c.written) < confirmEvery {
		return nil
	}
	if c.idx.Newest.Time != nil && at.Before(*c.idx.Newest.Time) {
		return nil
	}
	idx := c.idx
	idx.ConfirmedAt, idx.UpdatedAt = &at, c.now()
	return c.putIndex(ctx, idx)
}

// flush makes what is held whole durable, with a context of its own:
// the capture's has ended.
func (c *capturer) flush() error {
	c.abort()
	if c.w == nil || c.w.Revisions() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	return c.seal(ctx)
}

// stop is the capture told to stop: what is held whole is made durable
// (flush) and the record says so at once.
func (c *capturer) stop() error {
	err := c.flush()
	ctx, cancel := context.WithTimeout(context.Background(), progressTimeout)
	defer cancel()
	c.rec.note(ctx, c.idx, true)
	return err
}

// end closes the chain after a gap: what was received whole before it
// is made durable, then the index records the gap.
func (c *capturer) end(ctx context.Context, g *gapError) error {
	c.abort()
	if c.w != nil && c.w.Revisions() > 0 {
		if err := c.seal(ctx); err != nil {
			return errors.Join(g, err)
		}
	}
	idx := c.idx
	idx.Gap = &changelog.Gap{Reason: string(g.reason), At: c.now().UTC(), Message: g.Error()}
	idx.UpdatedAt = c.now().UTC()
	if err := c.putIndex(ctx, idx); err != nil {
		return errors.Join(g, err)
	}
	fmt.Fprintf(c.log, "etcd-stage capture: the chain ends at revision %d: %s: %v\n", idx.Newest.Revision, g.reason, g)
	return g
}

// retry runs fn until it succeeds, fails for good (the endpoint refused
// by policy, the context over) or has been tried sealAttempts times.
func retry(ctx context.Context, fn func(context.Context) error) error {
	var err error
	for attempt := range sealAttempts {
		if err = fn(ctx); err == nil || errors.Is(err, s3object.ErrRefused) || ctx.Err() != nil {
			return err
		}
		if attempt == sealAttempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(500<<attempt) * time.Millisecond):
		}
	}
	return err
}
