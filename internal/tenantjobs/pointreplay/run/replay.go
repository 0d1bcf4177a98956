// Package run is the Job side of a restore (or dry run) to a point that
// links the replay (internal/changereplay, and with it etcd's server):
// Replay, and Staging, the replay the staging step runs with
// (stagingstep.MainWith). Only etcd-stage and its tests import it; the
// driver builds the Jobs' arguments with internal/tenantjobs/pointreplay
// and never links etcd's server.
package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changereplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Replay makes out, the snapshot at p's target, from base, the base
// Backup's snapshot file as stored (with etcd's integrity trailer, its
// sha256 already checked against the Backup's): it reads the chain's
// index from store (whose Chain is replaced by p.Chain), fetches into
// workDir the segments the target needs, verified as they arrive, and
// replays them (changereplay.Replay; out gets a fresh trailer). The
// index must follow p.Base, the base the driver signed: the tenant's
// index cannot name another. workDir holds the segments and the scratch
// etcd's data, and is emptied on return.
func Replay(ctx context.Context, store changelog.Store, p pointreplay.Point, base, workDir, out string) (changereplay.Result, error) {
	if !p.Set() {
		return changereplay.Result{}, fmt.Errorf("%w: no point", pointreplay.ErrInvalidPoint)
	}
	if err := p.Validate(); err != nil {
		return changereplay.Result{}, err
	}
	if store.Limits == (changelog.Limits{}) {
		store.Limits = changelog.DefaultLimits
	}
	store.Chain = p.Chain
	segments := filepath.Join(workDir, "segments")
	if err := os.RemoveAll(segments); err != nil {
		return changereplay.Result{}, pointreplay.Disk(fmt.Errorf("empty the replay's folder: %w", err))
	}
	if err := os.MkdirAll(segments, 0o700); err != nil {
		return changereplay.Result{}, pointreplay.Disk(fmt.Errorf("make the replay's folder: %w", err))
	}
	defer os.RemoveAll(segments)

	idx, err := store.ReadIndex(ctx)
	if err != nil {
		return changereplay.Result{}, fmt.Errorf("read the chain's index: %w", err)
	}
	if idx.Base != p.Base {
		return changereplay.Result{}, fmt.Errorf("%w: the index at %s follows base %d (%s), the restore's base is %d (%s)",
			changelog.ErrForeignChain, changelog.IndexKey(p.Chain), idx.Base.Revision, idx.Base.SHA256, p.Base.Revision, p.Base.SHA256)
	}
	chain, err := store.Fetch(ctx, idx, p.Target.Want, segments)
	if err != nil {
		return changereplay.Result{}, fmt.Errorf("fetch the chain: %w", err)
	}
	stored := make([]changelog.Stored, len(chain.Segments))
	for i, s := range chain.Segments {
		stored[i] = s.Stored
	}
	res, err := changereplay.Replay(ctx, changereplay.Input{Base: base, Index: idx, Segments: stored, Target: p.Target,
		WorkDir: workDir, Out: out, Limits: store.Limits})
	if err != nil {
		return changereplay.Result{}, fmt.Errorf("replay to %s: %w", p.Target, err)
	}
	return res, nil
}

// Staging is Replay as the staging step calls it (stagingstep.PointReplay).
func Staging(ctx context.Context, store changelog.Store, p pointreplay.Point, base, workDir, out string) (stagingstep.PointResult, error) {
	res, err := Replay(ctx, store, p, base, workDir, out)
	if err != nil {
		return stagingstep.PointResult{}, err
	}
	return stagingstep.PointResult{Revision: res.Revision, Time: res.Time, Revisions: res.Revisions, Events: res.Events}, nil
}
