package step

import (
	"errors"
	"fmt"
	"math"
)

const (
	// DefaultMargin is added above the larger of the snapshot's and the
	// live revision: writes that land on the live cluster between reading
	// its revision and stopping it must still be below the restored one.
	DefaultMargin = 10000
	// UnknownLiveBump is the bump when the live revision cannot be read:
	// etcd's recovery guide recommends 1,000,000,000 (about a week of
	// 1,500 writes/s), as HyperShift's automated restore uses.
	UnknownLiveBump = 1_000_000_000
)

// ErrPlan marks a Plan that cannot be applied (both or neither of a floor
// and a bump, negative values, a target past the largest revision).
var ErrPlan = errors.New("invalid revision plan")

// Plan says which revision the staged snapshot restores at. Exactly one of
// Floor and Bump is set:
//   - Floor > 0: target = max(snapshot revision, Floor) + Margin;
//   - Bump > 0: target = snapshot revision + Bump.
type Plan struct {
	Floor  int64
	Margin int64
	Bump   int64
}

// FloorPlan is the plan when the live revision rLive was read before the
// cluster was stopped.
func FloorPlan(rLive int64) Plan { return Plan{Floor: rLive, Margin: DefaultMargin} }

// BumpPlan raises the snapshot's revision by n; use UnknownLiveBump when
// the live revision could not be read.
func BumpPlan(n int64) Plan { return Plan{Bump: n} }

// Validate refuses a plan that names no target or two.
func (p Plan) Validate() error {
	switch {
	case p.Floor < 0 || p.Margin < 0 || p.Bump < 0:
		return fmt.Errorf("%w: negative floor, margin or bump in %+v", ErrPlan, p)
	case p.Floor > 0 && p.Bump > 0:
		return fmt.Errorf("%w: both a floor (%d) and a bump (%d)", ErrPlan, p.Floor, p.Bump)
	case p.Floor == 0 && p.Bump == 0:
		return fmt.Errorf("%w: neither a floor nor a bump", ErrPlan)
	case p.Bump > 0 && p.Margin != 0:
		return fmt.Errorf("%w: a margin applies to a floor, not to a bump", ErrPlan)
	}
	return nil
}

// Target is the revision a snapshot whose latest revision is snap restores
// at under p; it is always above snap.
func (p Plan) Target(snap int64) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if snap < 0 {
		return 0, fmt.Errorf("%w: snapshot revision %d", ErrPlan, snap)
	}
	base, add := snap, p.Bump
	if p.Floor > 0 {
		base, add = max(snap, p.Floor), p.Margin
	}
	if base > math.MaxInt64-add {
		return 0, fmt.Errorf("%w: %d + %d overflows a revision", ErrPlan, base, add)
	}
	target := base + add
	if target <= snap {
		// A floor at or below the snapshot with no margin: nothing
		// would be compacted and the record would collide with the
		// snapshot's latest revision.
		return 0, fmt.Errorf("%w: target %d is not above the snapshot's revision %d", ErrPlan, target, snap)
	}
	return target, nil
}
