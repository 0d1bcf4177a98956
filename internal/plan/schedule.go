package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
)

// Errors ParseSchedule wraps, so the controller can report which part of the
// schedule is wrong.
var (
	// ErrInvalidCron: the cron expression does not parse.
	ErrInvalidCron = errors.New("invalid cron expression")
	// ErrInvalidTimeZone: the time zone is not a usable IANA name.
	ErrInvalidTimeZone = errors.New("invalid time zone")
)

// Schedule yields the run times of a Plan.
type Schedule interface {
	// Next returns the first run time strictly after t.
	Next(t time.Time) time.Time
}

// HashKey is what a Plan's H terms are hashed with (see hashcron): its
// namespace and name, so a Plan keeps its run times across restarts and
// re-creation, and Plans of the same name in different tenants differ.
func HashKey(namespace, name string) string {
	return namespace + "/" + name
}

// ParseSchedule reads a standard five-field cron expression (or a descriptor
// such as @daily or @every 1h) in the IANA time zone tz; an empty tz means
// UTC, never the controller's local zone, so a schedule means the same thing
// wherever the driver runs. Jenkins-style H terms are first resolved for key
// (HashKey of the Plan).
func ParseSchedule(expr, tz, key string) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("%w: spec.schedule.cron is empty", ErrInvalidCron)
	}
	resolved, err := hashcron.Resolve(expr, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCron, expr, err)
	}
	embeddedTZ := strings.HasPrefix(resolved, "CRON_TZ=") || strings.HasPrefix(resolved, "TZ=")
	if embeddedTZ && tz != "" {
		return nil, fmt.Errorf("%w: %q names a time zone and spec.schedule.timeZone is set too; use only spec.schedule.timeZone", ErrInvalidCron, expr)
	}
	loc := time.UTC
	if tz != "" {
		// "Local" would silently depend on the controller's host.
		if tz == "Local" {
			return nil, fmt.Errorf("%w: %q is not an IANA time zone name", ErrInvalidTimeZone, tz)
		}
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrInvalidTimeZone, tz, err)
		}
		loc = l
	}
	parsed, err := cron.ParseStandard(resolved)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCron, expr, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		// @every: a constant interval, the same in every zone. BackupJob
		// names carry the run's minute, so two runs in one minute would
		// share a name and the second would silently not happen.
		if every, isEvery := parsed.(cron.ConstantDelaySchedule); isEvery && every.Delay < time.Minute {
			return nil, fmt.Errorf("%w: %q: intervals shorter than one minute are not supported", ErrInvalidCron, expr)
		}
		return parsed, nil
	}
	if !embeddedTZ {
		spec.Location = loc
	} else if spec.Location == time.Local {
		return nil, fmt.Errorf("%w: %q: the embedded time zone must be an IANA name", ErrInvalidTimeZone, expr)
	}
	return dstSafe{spec: spec}, nil
}

// allHours is the bit mask of a cron hour field that matches every hour.
const allHours = uint64(1)<<24 - 1

// dstSafe runs a wall-clock schedule once per wall-clock match across
// daylight-saving changes, as classic cron does: a run whose local time
// falls into the hour skipped in spring happens when the clock jumps, and a
// run whose local time repeats in autumn happens only the first time.
// Schedules matching every hour keep running by elapsed time instead.
type dstSafe struct {
	spec *cron.SpecSchedule
}

func (s dstSafe) Next(t time.Time) time.Time {
	n := s.spec.Next(t)
	if n.IsZero() || s.spec.Hour&allHours == allHours {
		return n
	}
	loc := s.spec.Location
	if gap, ok := springGapRun(s.spec, loc, t, n); ok {
		return gap
	}
	if repeatedWallClock(loc, n) {
		return s.Next(n)
	}
	return n
}

// springGapRun finds a clock jump forward in (t, n) whose skipped wall times
// include a run of spec, and returns the instant of the jump.
func springGapRun(spec *cron.SpecSchedule, loc *time.Location, t, n time.Time) (time.Time, bool) {
	_, offT := t.In(loc).Zone()
	_, offN := n.In(loc).Zone()
	if offN <= offT {
		return time.Time{}, false
	}
	// Binary search the transition instant to the second.
	lo, hi := t, n
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if _, off := mid.In(loc).Zone(); off == offT {
			lo = mid
		} else {
			hi = mid
		}
	}
	jump := hi.Truncate(time.Second)
	if _, off := jump.In(loc).Zone(); off == offT {
		jump = jump.Add(time.Second)
	}
	// Read the schedule with the pre-jump offset: the wall times that do not
	// exist locally are then the instants [jump, jump+gap).
	before := *spec
	before.Location = time.FixedZone("before-jump", offT)
	missed := before.Next(jump.Add(-time.Second))
	gap := time.Duration(offN-offT) * time.Second
	if !missed.Before(jump) && missed.Before(jump.Add(gap)) && jump.After(t) {
		return jump, true
	}
	return time.Time{}, false
}

// repeatedWallClock reports whether n's local wall time already occurred
// earlier, before the clock was turned back.
func repeatedWallClock(loc *time.Location, n time.Time) bool {
	_, offN := n.In(loc).Zone()
	// Clock changes are months apart, so six hours back is before any
	// change that could repeat n's wall time.
	_, offBefore := n.Add(-6 * time.Hour).In(loc).Zone()
	if offBefore <= offN {
		return false
	}
	earlier := n.Add(-time.Duration(offBefore-offN) * time.Second)
	_, offE := earlier.In(loc).Zone()
	return offE == offBefore && sameWallClock(earlier.In(loc), n.In(loc))
}

func sameWallClock(a, b time.Time) bool {
	return a.Year() == b.Year() && a.YearDay() == b.YearDay() &&
		a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}
