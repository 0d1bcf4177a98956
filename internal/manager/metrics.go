package manager

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
)

// setupBackupMetrics registers the collector that derives each
// application's backup freshness from the cached Backups and Plans on every
// scrape. It serves on every replica, leader or not: the caches run on all.
func setupBackupMetrics(mgr ctrl.Manager, o Options) error {
	c, err := freshness.FromCache(context.Background(), mgr.GetCache(), o.BackupVerifier, o.Clock)
	if err != nil {
		return fmt.Errorf("backup metrics: %w", err)
	}
	if err := freshness.Register(metrics.Registry, c); err != nil {
		return fmt.Errorf("register backup metrics: %w", err)
	}
	return nil
}
