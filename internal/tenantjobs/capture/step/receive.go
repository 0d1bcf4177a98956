package step

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// created checks the watch's first answer: the etcd must be the cluster
// the chain follows, at or past the chain's newest revision.
func (c *capturer) created(ctx context.Context, m received) error {
	r := m.resp
	switch {
	case !r.Created || r.Header == nil:
		return fmt.Errorf("watch: the etcd answered before creating the watch")
	case c.cluster != 0 && r.Header.ClusterId != c.cluster:
		return gap(capture.ReasonClusterChanged, "the etcd is cluster %x, the chain follows cluster %x", r.Header.ClusterId, c.cluster)
	case r.Header.Revision < c.next()-1:
		return gap(capture.ReasonClusterChanged, "the etcd is at revision %d, the chain already holds revision %d: restored or replaced", r.Header.Revision, c.next()-1)
	case r.Canceled:
		return fmt.Errorf("watch: the etcd refused the watch: %s", r.CancelReason)
	}
	c.cluster = r.Header.ClusterId
	if c.w == nil {
		c.w = changelog.NewWriter(c.start(), c.lim)
	}
	return c.progress(ctx, r.Header.Revision, m.at)
}

// handle takes one watch message: events into the open revision, a
// revision ended when the next begins or the response ends.
func (c *capturer) handle(ctx context.Context, m received) (bool, error) {
	r := m.resp
	switch {
	case r.CompactRevision != 0:
		return false, gap(capture.ReasonCompacted, "the etcd compacted its history up to revision %d before the capture received revision %d", r.CompactRevision, c.next())
	case r.Canceled:
		return false, fmt.Errorf("watch: the etcd canceled the watch: %s", r.CancelReason)
	case len(r.Events) == 0:
		return false, c.progress(ctx, r.Header.Revision, m.at)
	}
	for _, ev := range r.Events {
		rev := ev.Kv.ModRevision
		if c.open != 0 && rev != c.open {
			if err := c.endRevision(ctx, m.at); err != nil {
				return true, err
			}
		}
		if c.open == 0 {
			if err := c.w.Begin(rev); err != nil {
				return true, gap(capture.ReasonRevisionGap, "the etcd sent revision %d after %d: %v", rev, c.next()-1, err)
			}
			c.open = rev
		}
		if err := c.add(ctx, ev); err != nil {
			return true, err
		}
	}
	if !r.Fragment && c.open != 0 {
		return true, c.endRevision(ctx, m.at)
	}
	return true, nil
}

func (c *capturer) add(ctx context.Context, ev *mvccpb.Event) error {
	kv := ev.Kv
	var err error
	switch ev.Type {
	case mvccpb.Event_DELETE:
		err = c.w.Delete(kv.Key)
	case mvccpb.Event_PUT:
		if kv.Lease != 0 {
			if err := c.noteLease(ctx, kv.Lease); err != nil {
				return err
			}
		}
		err = c.w.Put(kv.Key, kv.Value, kv.Lease)
	default:
		return gap(capture.ReasonRevisionGap, "revision %d holds an event of unknown type %d", kv.ModRevision, ev.Type)
	}
	if errors.Is(err, changelog.ErrTooLarge) {
		return gap(capture.ReasonRevisionTooLarge, "%v", err)
	}
	return err
}

// endRevision commits the open revision, received whole at at; the
// segment's first revision starts its clock, and a segment at its size
// is due.
func (c *capturer) endRevision(ctx context.Context, at time.Time) error {
	first := c.w.Revisions() == 0
	if err := c.w.End(at); err != nil {
		if errors.Is(err, changelog.ErrTooLarge) {
			return gap(capture.ReasonRevisionTooLarge, "%v", err)
		}
		return err
	}
	c.open = 0
	for _, id := range c.noting {
		if len(c.noted) >= maxNoted {
			clear(c.noted)
		}
		c.noted[id] = struct{}{}
	}
	c.noting = c.noting[:0]
	if c.received != nil {
		c.received(c.w.Next() - 1)
	}
	if first {
		c.cut = time.NewTimer(c.o.SegmentInterval)
	}
	if c.w.RawBytes() >= c.o.SegmentBytes {
		c.cutDue = true
	}
	if c.cutDue {
		return c.seal(ctx)
	}
	return nil
}

// abort drops a revision not received whole.
func (c *capturer) abort() {
	if c.open != 0 {
		c.w.Abort()
		c.open, c.noting = 0, c.noting[:0]
	}
}

// noteLease records, the first time a put uses a lease, the TTL it was
// granted with (the watch carries its ID only); replay gives the lease
// that TTL. A lease already gone is noted with TTL 0.
func (c *capturer) noteLease(ctx context.Context, id int64) error {
	if _, ok := c.noted[id]; ok {
		return nil
	}
	for _, n := range c.noting {
		if n == id {
			return nil
		}
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.cli.TimeToLive(tctx, clientv3.LeaseID(id))
	ttl := int64(0)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
	case err != nil:
		return fmt.Errorf("read the TTL of lease %x: %w", id, err)
	case resp.TTL >= 0:
		ttl = resp.GrantedTTL
	}
	c.noting = append(c.noting, id)
	return c.w.NoteLease(id, ttl)
}
