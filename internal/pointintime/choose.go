package pointintime

import (
	"context"
	"errors"
	"fmt"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// ErrNoBase: no Backup of the application can be the base of a restore
// to the point.
var ErrNoBase = errors.New("no base Backup at or before the point")

// Base is the Backup a restore to a point starts from, and its chain.
type Base struct {
	Backup *backupsv1alpha1.Backup
	Chain  Chain
}

// Choose is the base of a restore to t of the application of Backup of:
// the newest of backups that is in of's namespace, of the same
// application, taken by the Etcd strategy, recorded by this driver (its
// provenance verified with keys), good (goodbackup.Good) and inspected
// (a manifest the driver signed) and that is at or before t: its signed
// revision at or below t's revision, or its signed time at or before t's
// time. Newest is by signed revision for a revision, by signed time for
// a time. of itself need not be the base. None: ErrNoBase, wrapped with
// what was looked at.
func Choose(ctx context.Context, keys provenance.Keys, backups []backupsv1alpha1.Backup, of *backupsv1alpha1.Backup, t changelog.Target) (Base, error) {
	if err := t.Check(); err != nil {
		return Base{}, err
	}
	app := of.Spec.ApplicationRef.Name
	var best *backupsv1alpha1.Backup
	var bestRev int64
	var bestAt provenance.Verdict
	considered := 0
	for i := range backups {
		b := &backups[i]
		if b.Namespace != of.Namespace || !strategyv1alpha1.IsEtcd(b.Spec.StrategyRef) {
			continue
		}
		v, err := provenance.Verify(ctx, keys, b)
		if err != nil {
			return Base{}, err
		}
		if !v.Verified || v.Facts.Application != app || !goodbackup.Good(b, true) || b.Status.Artifact == nil {
			continue
		}
		considered++
		rev, err := SignedRevision(ctx, keys, b)
		if err != nil {
			return Base{}, err
		}
		if rev <= 0 || !atOrBefore(t, rev, v) {
			continue
		}
		if best == nil || newer(t, rev, v, b, bestRev, bestAt, best) {
			best, bestRev, bestAt = b, rev, v
		}
	}
	if best == nil {
		return Base{}, fmt.Errorf("%w: none of the %d good Backups of application %s in %s this driver recorded has an inspected revision at or before %s",
			ErrNoBase, considered, app, of.Namespace, t)
	}
	chain, err := ChainOf(best, bestRev)
	if err != nil {
		return Base{}, err
	}
	return Base{Backup: best, Chain: chain}, nil
}

// atOrBefore: a Backup at signed revision rev, taken at v's signed time,
// is at or before t.
func atOrBefore(t changelog.Target, rev int64, v provenance.Verdict) bool {
	if t.Revision > 0 {
		return rev <= t.Revision
	}
	return !v.TakenAt().After(t.Time)
}

// newer: the Backup b (rev, v) is a better base for t than best.
func newer(t changelog.Target, rev int64, v provenance.Verdict, b *backupsv1alpha1.Backup,
	bestRev int64, bestAt provenance.Verdict, best *backupsv1alpha1.Backup) bool {
	if t.Revision > 0 && rev != bestRev {
		return rev > bestRev
	}
	if at, other := v.TakenAt(), bestAt.TakenAt(); !at.Equal(other) {
		return at.After(other)
	}
	if rev != bestRev {
		return rev > bestRev
	}
	return b.Name > best.Name
}
