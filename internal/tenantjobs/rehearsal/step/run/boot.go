package run

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/keywalk"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/scratchetcd"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// errMismatch: the restored etcd started but does not answer as staged.
var errMismatch = errors.New("the restored etcd does not read back as staged")

// readBack is what the booted member answered.
type readBack struct {
	revision, compacted, keys int64
	counter                   *manifest.Counter
}

// bootAndRead starts the member restored in m (scratchetcd: in-process,
// loopback only), checks it answers at the staged revision with
// everything below compacted, walks every key (keywalk.Walk) into a
// Counter, and stops it.
func bootAndRead(ctx context.Context, m scratchetcd.Member, staged stagingstep.Result) (readBack, error) {
	e, err := scratchetcd.Start(ctx, m, scratchetcd.Options{})
	if err != nil {
		return readBack{}, err
	}
	defer e.Close()
	cli, err := e.Client(0)
	if err != nil {
		return readBack{}, err
	}
	defer cli.Close()
	return read(ctx, cli, staged)
}

// read checks the revision and the compaction and counts every key.
func read(ctx context.Context, cli *clientv3.Client, staged stagingstep.Result) (readBack, error) {
	head, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return readBack{}, fmt.Errorf("read the restored etcd's revision: %w", err)
	}
	rev := head.Header.Revision
	if rev != staged.Revision {
		return readBack{}, fmt.Errorf("%w: it answers at revision %d, the staged snapshot is at %d", errMismatch, rev, staged.Revision)
	}
	below := staged.CompactedRevision - 1
	if below > 0 {
		_, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(below))
		if !errors.Is(err, rpctypes.ErrCompacted) {
			return readBack{}, fmt.Errorf("%w: a read at revision %d (below the staged compaction at %d) answered %v, not ErrCompacted",
				errMismatch, below, staged.CompactedRevision, err)
		}
	}
	c := manifest.NewCounter()
	if _, err := keywalk.Walk(ctx, cli, rev, func(k []byte) error { c.Add(k); return nil }); err != nil {
		return readBack{}, fmt.Errorf("walk the restored etcd's keys: %w", err)
	}
	if c.Keys() != head.Count {
		return readBack{}, fmt.Errorf("%w: the walk counted %d keys, the count query %d", errMismatch, c.Keys(), head.Count)
	}
	return readBack{revision: rev, compacted: staged.CompactedRevision, keys: c.Keys(), counter: c}, nil
}
