package freshness

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// FromCache returns a Collector over the Backup and Plan informers of c
// (creating them if no controller has yet; they start with the cache). It
// reads the informers' stores directly: a client List would deep-copy
// every Backup on every scrape.
func FromCache(ctx context.Context, c cache.Cache, verify Verifier, held HoldChecker, epoch func() uint64, clk clock.PassiveClock) (*Collector, error) {
	backups, backupsSynced, err := store(ctx, c, &backupsv1alpha1.Backup{})
	if err != nil {
		return nil, err
	}
	plans, plansSynced, err := store(ctx, c, &backupsv1alpha1.Plan{})
	if err != nil {
		return nil, err
	}
	return New(Options{
		Backups: backups, Plans: plans,
		Synced: func() bool { return backupsSynced() && plansSynced() },
		Verify: verify, Held: held, Epoch: epoch, Clock: clk,
	}), nil
}

func store(ctx context.Context, c cache.Cache, obj client.Object) (Lister, func() bool, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, nil, fmt.Errorf("informer for %T (%T) has no store to list", obj, inf)
	}
	return withStore.GetStore(), inf.HasSynced, nil
}
