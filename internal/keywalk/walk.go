// Package keywalk walks every key of an etcd: keys only, in key order, in
// pages, all at one revision. The live census (internal/liverevision) and
// the rehearsal's read-back of a restored snapshot
// (internal/tenantjobs/rehearsal/step/run) count what an etcd holds with
// it. It needs only etcd's client: the driver links it.
package keywalk

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PageSize is how many keys one range of the walk asks for.
const PageSize = 1000

// Walk calls add with every key of kv, in key order, reading PageSize
// keys a range, all at revision rev, or, when rev is 0, at the revision
// the first range answered at; it returns the revision it walked at. A
// failed range, or an error of add, ends the walk with that error.
func Walk(ctx context.Context, kv clientv3.KV, rev int64, add func(key []byte) error) (int64, error) {
	key := "\x00"
	for {
		opts := []clientv3.OpOption{clientv3.WithFromKey(), clientv3.WithKeysOnly(), clientv3.WithLimit(PageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		page, err := kv.Get(ctx, key, opts...)
		if err != nil {
			return rev, err
		}
		if rev == 0 {
			rev = page.Header.Revision
		}
		for _, kv := range page.Kvs {
			if err := add(kv.Key); err != nil {
				return rev, err
			}
		}
		if !page.More || len(page.Kvs) == 0 {
			return rev, nil
		}
		key = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
	}
}
