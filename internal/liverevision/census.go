package liverevision

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/keywalk"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

// CensusTimeout bounds a census, dial included: a walk of every key of a
// large cluster takes longer than one read.
const CensusTimeout = 2 * time.Minute

// Census is what the live cluster holds: its revision and its keys,
// counted per Kubernetes keyspace, resource and namespace.
type Census struct {
	Revision int64
	Counter  *manifest.Counter
}

// Census reads every key of the etcd in ns (keywalk.Walk: keys only, in
// pages, all at the revision of the first page) into a manifest.Counter:
// what a
// rehearsal compares a Backup with. It dials, checks and fails as
// Revision does; TenantMessage is what a tenant may read of an error.
func (r Reader) Census(ctx context.Context, ns string) (Census, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = CensusTimeout
	}
	c := Census{Counter: manifest.NewCounter()}
	err := r.with(ctx, ns, timeout, func(ctx context.Context, cli *clientv3.Client, addr string) error {
		rev, err := keywalk.Walk(ctx, cli, 0, c.Counter.Add)
		if err != nil {
			return fmt.Errorf("walk the keys of etcd at %s: %w", addr, err)
		}
		c.Revision = rev
		return nil
	})
	if err != nil {
		return Census{}, err
	}
	return c, nil
}
