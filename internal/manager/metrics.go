package manager

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/contentdrop"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// setupBackupMetrics registers the collector that derives each
// application's backup freshness from the cached Backups and Plans on every
// scrape. It serves on every replica, leader or not: the caches run on all.
func setupBackupMetrics(mgr ctrl.Manager, o Options, d deps) error {
	verify := o.BackupVerifier
	if verify == nil {
		verify = provenanceVerifier(d.keys)
	}
	epoch := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return d.keys.Generation(ctx)
	}
	c, err := freshness.FromCache(context.Background(), mgr.GetCache(), verify, driverHolds(d.keys), epoch, o.Clock)
	if err != nil {
		return fmt.Errorf("backup metrics: %w", err)
	}
	if err := freshness.Register(metrics.Registry, c); err != nil {
		return fmt.Errorf("register backup metrics: %w", err)
	}
	return nil
}

// provenanceVerifier counts a Backup when the driver's signature verifies,
// at the signed time. A key that cannot be read now is an error: the
// Collector asks again at the next scrape instead of remembering the Backup
// as unverified.
func provenanceVerifier(keys provenance.Keys) freshness.Verifier {
	return func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := provenance.Verify(ctx, keys, b)
		if err != nil {
			return time.Time{}, false, err
		}
		if !v.Verified || b.Status.Phase != backupsv1alpha1.BackupPhaseReady {
			return time.Time{}, false, nil
		}
		return v.TakenAt(), true, nil
	}
}

// driverHolds counts a content-drop hold only when the driver placed it
// (its signed mark verifies); a key that cannot be read now is an error,
// asked again at the next scrape.
func driverHolds(keys provenance.Keys) freshness.HoldChecker {
	return func(b *backupsv1alpha1.Backup) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return contentdrop.HeldByDriver(ctx, keys, b)
	}
}
