package step

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
)

// A restore to a point stages the snapshot at the point: the base
// Backup's snapshot, checked as every staged snapshot is, with its chain
// of captured changes replayed onto it up to the point
// (pointreplay/run.Replay, in a throwaway etcd inside this process,
// handed to MainWith: this package links no etcd server), then
// raised and compacted as any staged snapshot is: the floor plan applies
// to the point's revision.

// Replayer makes out, the snapshot at a point (with etcd's integrity
// trailer), from base, the checked snapshot as stored (with its
// trailer), working in workDir.
type Replayer func(base, workDir, out string) (PointResult, error)

// PointReplay makes out, the snapshot at p, from base (as Replayer),
// reading p's chain from store: pointreplay/run.Staging.
type PointReplay func(ctx context.Context, store changelog.Store, p pointreplay.Point, base, workDir, out string) (PointResult, error)

// PointResult is what was replayed onto the base before staging.
type PointResult struct {
	// Revision is the point's revision; Time when the capture received
	// it (none for the base's own).
	Revision int64      `json:"revision"`
	Time     *time.Time `json:"time,omitempty"`
	// Revisions and Events count what was applied on top of the base.
	Revisions int64 `json:"revisions"`
	Events    int64 `json:"events"`
}

// StageAt is Stage of the snapshot at a point: r is checked as Stage
// checks it, at replays it next to out, and the result is raised as p
// says, given its trailer and renamed to out. The replay's files are
// named as Stage's temporary files, so a killed attempt's are removed
// by the next.
func StageAt(r io.Reader, size int64, sha256Hex string, out string, p Plan, at Replayer) (Result, error) {
	if at == nil {
		return Result{}, fmt.Errorf("%w: no replay", ErrArguments)
	}
	return stage(r, size, sha256Hex, out, p, at)
}

// replayTo turns db, the downloaded database (its trailer stripped), into
// the database at the point, in a new temporary file next to out, and
// removes db.
func replayTo(db, out string, at Replayer) (string, *PointResult, error) {
	defer os.Remove(db)
	// The stored bytes again (the trailer is the database's sha256): the
	// replay checks them against the chain's base.
	if _, err := appendTrailer(db); err != nil {
		return "", nil, err
	}
	dir, prefix := filepath.Dir(out), tempPrefix(out)
	work := filepath.Join(dir, prefix+"replay")
	defer os.RemoveAll(work)
	f, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return "", nil, localError{fmt.Errorf("create the replay's file in %s: %w", dir, err)}
	}
	replayed := f.Name()
	f.Close()
	res, err := at(db, work, replayed)
	if err == nil {
		err = stripTrailer(replayed)
	}
	if err != nil {
		os.Remove(replayed)
		return "", nil, err
	}
	return replayed, &res, nil
}

func stripTrailer(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return localError{fmt.Errorf("stat the replayed snapshot: %w", err)}
	}
	if err := os.Truncate(path, st.Size()-sha256.Size); err != nil {
		return localError{fmt.Errorf("strip the replayed snapshot's trailer: %w", err)}
	}
	return nil
}

// chainStore is the chain of o's point: in the base's bucket, reached as
// the base is (the same keys, CA and endpoint policy).
func (o Options) chainStore(env func(string) string) (changelog.Store, error) {
	store, creds, err := StoreFromEnv(o.AllowedEndpointCIDRs, o.AllowHTTP, env)
	if err != nil {
		return changelog.Store{}, err
	}
	return changelog.Store{S3: store, Creds: creds, Chain: o.Point.Chain, Limits: changelog.DefaultLimits,
		Bucket: s3object.Location{Endpoint: o.Endpoint, Bucket: o.Bucket, Region: o.Region, ForcePathStyle: o.PathStyle}}, nil
}

// stageAtPoint stages o's object replayed to o's point.
func stageAtPoint(ctx context.Context, o Options, r io.Reader, env func(string) string, replay PointReplay) (Result, error) {
	if replay == nil {
		return Result{}, fmt.Errorf("%w: this etcd-stage cannot replay a point (stagingstep.MainWith without a PointReplay)", ErrArguments)
	}
	store, err := o.chainStore(env)
	if err != nil {
		return Result{}, err
	}
	return StageAt(r, o.Size, o.SHA256, o.Out, o.Plan(), func(base, work, out string) (PointResult, error) {
		return replay(ctx, store, o.Point, base, work, out)
	})
}

// checkPoint refuses a point whose chain is not the one beside o's
// object (changelog.ChainDir, as pointintime.ChainOf places it).
func (o Options) checkPoint() error {
	if !o.Point.Set() {
		return nil
	}
	if err := o.Point.Validate(); err != nil {
		return err
	}
	if want := changelog.ChainPrefix(changelog.ChainDir(o.Key), o.Point.Base.Revision); o.Point.Chain != want {
		return fmt.Errorf("%w: --chain %q is not the chain of --key %q (%s)", ErrArguments, o.Point.Chain, o.Key, want)
	}
	if o.Point.Base.SHA256 != o.SHA256 {
		return fmt.Errorf("%w: --chain-base-sha256 is not the object's --sha256", ErrArguments)
	}
	return nil
}
