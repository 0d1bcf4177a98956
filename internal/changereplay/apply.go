package changereplay

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/lease"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
)

// ErrDiverged: the scratch etcd did not answer a replayed transaction
// with the captured revision (the base is not the chain's, or the etcd
// acted on its own).
var ErrDiverged = changelog.ErrDiverged

// applier applies captured revisions to the scratch etcd.
type applier struct {
	cli    *clientv3.Client
	leases pb.LeaseClient
	// live are the leases the scratch etcd holds.
	live map[int64]bool
	// noted are the TTLs the capture noted, by lease.
	noted map[int64]int64
	// events counts the events applied.
	events int64
}

func newApplier(cli *clientv3.Client, base map[int64]int64) *applier {
	a := &applier{cli: cli, leases: pb.NewLeaseClient(cli.ActiveConnection()), live: map[int64]bool{}, noted: map[int64]int64{}}
	for id := range base {
		a.live[id] = true
	}
	return a
}

// apply replays rv as one transaction of its events, in order, and
// checks the scratch etcd gave it rv's revision.
func (a *applier) apply(ctx context.Context, rv changelog.Revision) error {
	for _, n := range rv.Leases {
		a.noted[n.ID] = max(a.noted[n.ID], n.TTL)
	}
	ops := make([]clientv3.Op, 0, len(rv.Events))
	for _, ev := range rv.Events {
		if ev.Type == changelog.Delete {
			ops = append(ops, clientv3.OpDelete(string(ev.Key)))
			continue
		}
		var opts []clientv3.OpOption
		if ev.Lease != 0 {
			if err := a.hold(ctx, ev.Lease); err != nil {
				return err
			}
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(ev.Lease)))
		}
		ops = append(ops, clientv3.OpPut(string(ev.Key), string(ev.Value), opts...))
	}
	resp, err := a.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("replay revision %d: %w", rv.Revision, err)
	}
	if resp.Header.Revision != rv.Revision {
		return fmt.Errorf("%w: revision %d replayed as %d", ErrDiverged, rv.Revision, resp.Header.Revision)
	}
	a.events += int64(len(rv.Events))
	return nil
}

// hold grants lease id, under its own ID and with etcd's largest TTL,
// unless the scratch etcd holds it already. A grant makes no revision.
func (a *applier) hold(ctx context.Context, id int64) error {
	if a.live[id] {
		return nil
	}
	if _, err := a.leases.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: lease.MaxLeaseTTL}); err != nil {
		return fmt.Errorf("grant lease %x: %w", id, err)
	}
	a.live[id] = true
	return nil
}
