package changereplay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/scratchetcd"
)

// ErrBaseMismatch: the base snapshot is not the one the chain follows
// (another sha256, or it restores at another revision).
var ErrBaseMismatch = changelog.ErrBaseMismatch

// Input is one replay.
type Input struct {
	// Base is the base Backup's snapshot file, as stored (with etcd's
	// integrity trailer).
	Base string
	// Index is the chain's index and Segments its segments from 0 on,
	// fetched to local files (changelog.Store.Fetch); they are verified
	// again here.
	Index    changelog.Index
	Segments []changelog.Stored
	Target   changelog.Target
	// WorkDir holds the scratch etcd's data while it runs (removed after).
	WorkDir string
	// Out is the snapshot made at the target.
	Out string
	// Limits bound the segments read (zero: changelog.DefaultLimits).
	Limits changelog.Limits
}

// Result is what a replay made.
type Result struct {
	// Revision is the target's revision and Time when the capture
	// received it (nil for the base's).
	Revision int64
	Time     *time.Time
	// Revisions and Events count what was applied on top of the base.
	Revisions int64
	Events    int64
	// Size and SHA256 describe Out.
	Size   int64
	SHA256 string
}

// Replay verifies the chain, resolves the target, restores the base into
// a scratch etcd, applies each revision up to the target and snapshots
// the result to in.Out.
func Replay(ctx context.Context, in Input) (Result, error) {
	if in.Limits == (changelog.Limits{}) {
		in.Limits = changelog.DefaultLimits
	}
	chain, err := changelog.Verify(in.Index.Base, in.Segments, in.Index, in.Limits)
	if err != nil {
		return Result{}, err
	}
	if err := checkBase(in.Base, chain.Base); err != nil {
		return Result{}, err
	}
	point, err := changelog.Resolve(chain, in.Index, in.Target, in.Limits)
	if err != nil {
		return Result{}, err
	}
	data := filepath.Join(in.WorkDir, "replay")
	if err := os.RemoveAll(data); err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(data)
	m, err := scratchetcd.Restore(in.Base, data)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBaseMismatch, err)
	}
	h, err := quiesce(m.DBPath())
	if err != nil {
		return Result{}, err
	}
	e, err := scratchetcd.Start(ctx, m, scratchetcd.Options{
		MaxTxnOps:       uint(in.Limits.MaxRevisionEvents),
		MaxRequestBytes: uint(in.Limits.MaxRevisionBytes) + requestSlack,
		// The base and every change, twice over: no quota alarm.
		QuotaBackendBytes: 2*(fileSize(in.Base)+rawBytes(chain)) + 1<<30,
	})
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	cli, err := e.Client(int(in.Limits.MaxRevisionBytes) + 2*requestSlack)
	if err != nil {
		return Result{}, err
	}
	defer cli.Close()

	res := Result{Revision: point.Revision, Time: point.Time}
	a, err := replay(ctx, cli, chain, h, point.Revision, in.Limits)
	if err != nil {
		return Result{}, err
	}
	res.Revisions, res.Events = point.Revision-chain.Base.Revision, a.events
	checked, err := snapshot(ctx, cli, in.Out, func(db string) error { return h.restore(db, a.noted) })
	if err != nil {
		return Result{}, err
	}
	res.Size, res.SHA256 = checked.Size, checked.SHA256
	return res, nil
}

// requestSlack covers a transaction's framing above its events' bytes.
const requestSlack = 4 << 20

// replay checks the scratch etcd starts at the chain's base and applies
// every revision up to target.
func replay(ctx context.Context, cli *clientv3.Client, c changelog.Chain, h held, target int64, lim changelog.Limits) (*applier, error) {
	head, err := cli.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("read the restored base's revision: %w", err)
	}
	if head.Header.Revision != c.Base.Revision {
		return nil, fmt.Errorf("%w: it restores at revision %d, the chain follows revision %d", ErrBaseMismatch, head.Header.Revision, c.Base.Revision)
	}
	a := newApplier(cli, h.ttl)
	for _, s := range c.Segments {
		if s.Header.From > target {
			break
		}
		if err := applySegment(ctx, a, s, target, lim); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func applySegment(ctx context.Context, a *applier, s changelog.Verified, target int64, lim changelog.Limits) error {
	f, err := os.Open(s.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := changelog.NewReader(f, lim)
	if err != nil {
		return &changelog.SegmentError{Seq: s.Seq, Key: s.Key, Err: err}
	}
	for {
		rv, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &changelog.SegmentError{Seq: s.Seq, Key: s.Key, Err: err}
		}
		if rv.Revision > target {
			return nil
		}
		if err := a.apply(ctx, rv); err != nil {
			return err
		}
	}
}

// checkBase refuses a base file whose sha256 is not the chain's.
func checkBase(path string, b changelog.Base) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != b.SHA256 {
		return fmt.Errorf("%w: its sha256 is %s, the chain follows %s", ErrBaseMismatch, sum, b.SHA256)
	}
	return nil
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func rawBytes(c changelog.Chain) int64 {
	var n int64
	for _, s := range c.Segments {
		n += s.Header.RawBytes
	}
	return n
}

// snapshot streams the scratch etcd's snapshot to out, puts back what
// the replay held (fix, on the database without its trailer), and gives
// the file a new trailer; out appears only when complete.
func snapshot(ctx context.Context, cli *clientv3.Client, out string, fix func(db string) error) (s3object.Checked, error) {
	tmp := out + ".replay"
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		return s3object.Checked{}, fmt.Errorf("snapshot the replayed etcd: %w", err)
	}
	defer rc.Close()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return s3object.Checked{}, err
	}
	defer os.Remove(tmp)
	_, err = s3object.CheckSnapshot(io.TeeReader(rc, f), 0, "")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s3object.Checked{}, fmt.Errorf("snapshot the replayed etcd: %w", err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return s3object.Checked{}, err
	}
	if err := os.Truncate(tmp, st.Size()-sha256.Size); err != nil {
		return s3object.Checked{}, err
	}
	if err := fix(tmp); err != nil {
		return s3object.Checked{}, err
	}
	checked, err := s3object.AppendTrailer(tmp)
	if err != nil {
		return s3object.Checked{}, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return s3object.Checked{}, err
	}
	return checked, nil
}
