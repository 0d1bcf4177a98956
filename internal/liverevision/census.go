package liverevision

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

// CensusTimeout bounds a census, dial included: a walk of every key of a
// large cluster takes longer than one read.
const CensusTimeout = 2 * time.Minute

// censusPage is how many keys one range of the walk asks for.
const censusPage = 1000

// Census is what the live cluster holds: its revision and its keys,
// counted per Kubernetes keyspace, resource and namespace.
type Census struct {
	Revision int64
	Counter  *manifest.Counter
}

// Census reads every key of the etcd in ns (keys only, in pages, all at
// the revision of the first page) into a manifest.Counter: what a
// rehearsal compares a Backup with. It dials, checks and fails as
// Revision does; TenantMessage is what a tenant may read of an error.
func (r Reader) Census(ctx context.Context, ns string) (Census, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = CensusTimeout
	}
	c := Census{Counter: manifest.NewCounter()}
	err := r.with(ctx, ns, timeout, func(ctx context.Context, cli *clientv3.Client, addr string) error {
		key, rev := "\x00", int64(0)
		for {
			opts := []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithKeysOnly(), clientv3.WithLimit(censusPage),
				clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
			if rev > 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			page, err := cli.Get(ctx, key, opts...)
			if err != nil {
				return fmt.Errorf("walk the keys of etcd at %s: %w", addr, err)
			}
			if rev == 0 {
				rev = page.Header.Revision
			}
			for _, kv := range page.Kvs {
				c.Counter.Add(kv.Key)
			}
			if !page.More || len(page.Kvs) == 0 {
				break
			}
			key = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
		}
		c.Revision = rev
		return nil
	})
	if err != nil {
		return Census{}, err
	}
	return c, nil
}
