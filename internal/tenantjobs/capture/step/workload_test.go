package step

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// workload writes what a busy etcd sees, from writers goroutines at
// once, ops operations each: single puts and overwrites, transactions of
// several keys with a delete, deletes, a range deleted in one revision,
// keys attached to leases and leases revoked (their keys deleted in one
// revision), and now and then a 200 KiB value.
func workload(ctx context.Context, t testing.TB, cli *clientv3.Client, round string, writers, ops int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(len(round))))
			for i := range ops {
				if err := operation(ctx, cli, rng, fmt.Sprintf("%s-w%d", round, w), i); err != nil {
					errs <- fmt.Errorf("writer %d op %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func operation(ctx context.Context, cli *clientv3.Client, rng *rand.Rand, who string, i int) error {
	k := func(kind string, n int) string { return key(kind, who, fmt.Sprintf("obj-%d", n)) }
	value := fmt.Sprintf(`{"kind":"Pod","writer":%q,"op":%d,"spec":%q}`, who, i, strings.Repeat("x", rng.IntN(400)))
	var err error
	switch n := rng.IntN(20); {
	case n < 8:
		_, err = cli.Put(ctx, k("pods", rng.IntN(30)), value)
	case n < 12:
		_, err = cli.Txn(ctx).Then(
			clientv3.OpPut(k("configmaps", rng.IntN(30)), value),
			clientv3.OpPut(k("secrets", rng.IntN(30)), value+"s"),
			clientv3.OpPut(k("endpoints", rng.IntN(30)), value+"e"),
			clientv3.OpDelete(k("pods", rng.IntN(30))),
		).Commit()
	case n < 15:
		_, err = cli.Delete(ctx, k("pods", rng.IntN(30)))
	case n < 16:
		prefix := key("ranges", who, fmt.Sprint(i)) + "/"
		for j := range 5 {
			if _, err = cli.Put(ctx, fmt.Sprintf("%s%d", prefix, j), value); err != nil {
				return err
			}
		}
		_, err = cli.Delete(ctx, prefix, clientv3.WithPrefix())
	case n < 19:
		var l *clientv3.LeaseGrantResponse
		if l, err = cli.Grant(ctx, 30+int64(rng.IntN(3000))); err != nil {
			return err
		}
		for j := range 2 {
			if _, err = cli.Put(ctx, k("events", i*2+j), value, clientv3.WithLease(l.ID)); err != nil {
				return err
			}
		}
		if rng.IntN(2) == 0 {
			_, err = cli.Revoke(ctx, l.ID)
		}
	default:
		_, err = cli.Put(ctx, k("big", rng.IntN(3)), strings.Repeat("b", 200<<10))
	}
	return err
}
