package pointreplay

import (
	"errors"
	"flag"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
)

// ErrInvalidPoint marks a point a step cannot replay to (a driver bug or
// a hand-made Job, never the tenant's data).
var ErrInvalidPoint = errors.New("invalid point to replay to")

// Point is where a step replays to: the chain following the base (its
// prefix in the base's bucket, changelog.ChainPrefix), the base it must
// start from (the signed revision and the Backup's recorded sha256) and
// the target. The zero Point asks for no replay.
type Point struct {
	Chain  string
	Base   changelog.Base
	Target changelog.Target
}

// Set reports whether p asks for a replay.
func (p Point) Set() bool { return p != Point{} }

// Validate refuses a point that names no chain, no base or no target.
func (p Point) Validate() error {
	if !p.Set() {
		return nil
	}
	if err := changelog.CheckPrefix(p.Chain); err != nil {
		return fmt.Errorf("%w: --chain: %w", ErrInvalidPoint, err)
	}
	if p.Base.Revision <= 0 || len(p.Base.SHA256) != 64 {
		return fmt.Errorf("%w: --chain-base-revision and --chain-base-sha256 (64 hex digits) are required", ErrInvalidPoint)
	}
	if p.Chain != changelog.ChainPrefix(path.Dir(path.Dir(p.Chain)), p.Base.Revision) {
		return fmt.Errorf("%w: chain %q does not follow base revision %d", ErrInvalidPoint, p.Chain, p.Base.Revision)
	}
	if err := p.Target.Check(); err != nil {
		return fmt.Errorf("%w: --to-revision or --to-time: %w", ErrInvalidPoint, err)
	}
	if p.Target.Revision > 0 && p.Target.Revision < p.Base.Revision {
		return fmt.Errorf("%w: revision %d is before the base's %d", ErrInvalidPoint, p.Target.Revision, p.Base.Revision)
	}
	return nil
}

// Args are the flags that make Bind read p; none for the zero Point.
func (p Point) Args() []string {
	if !p.Set() {
		return nil
	}
	args := []string{"--chain=" + p.Chain,
		"--chain-base-revision=" + strconv.FormatInt(p.Base.Revision, 10),
		"--chain-base-sha256=" + p.Base.SHA256}
	if p.Target.Revision > 0 {
		return append(args, "--to-revision="+strconv.FormatInt(p.Target.Revision, 10))
	}
	return append(args, "--to-time="+p.Target.Time.UTC().Format(time.RFC3339Nano))
}

// Bind registers the point's flags on fs, read into p; the returned
// function, called after fs.Parse, reads the time and validates p (none
// of the flags given: the zero Point).
func Bind(fs *flag.FlagSet, p *Point) func() error {
	var at string
	fs.StringVar(&p.Chain, "chain", "", "Prefix of the chain of captured changes to replay onto the snapshot (a restore to a point).")
	fs.Int64Var(&p.Base.Revision, "chain-base-revision", 0, "Revision of the base snapshot the chain follows.")
	fs.StringVar(&p.Base.SHA256, "chain-base-sha256", "", "Recorded sha256 of the base snapshot the chain follows (its genesis).")
	fs.Int64Var(&p.Target.Revision, "to-revision", 0, "Replay up to this revision.")
	fs.StringVar(&at, "to-time", "", "Replay up to the newest revision received at or before this RFC 3339 time.")
	return func() error {
		if at != "" {
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return fmt.Errorf("%w: --to-time: %w", ErrInvalidPoint, err)
			}
			p.Target.Time = t.UTC()
		}
		return p.Validate()
	}
}
