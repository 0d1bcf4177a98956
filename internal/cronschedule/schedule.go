// Package cronschedule reads the cron expressions of Plans (a backup
// schedule and a drill schedule) and says which run is due: standard
// five-field expressions and descriptors, Jenkins-style H terms hashed from
// the Plan (internal/hashcron), and an optional time zone written as the
// `CRON_TZ=Europe/Berlin ` prefix that Cozystack's own Plan controller
// (robfig/cron's ParseStandard) understands too. Without a prefix an
// expression is read in UTC.
package cronschedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
)

// Errors Parse wraps, so a controller can report which part of the schedule
// is wrong.
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

// tzPrefixes introduce the time zone robfig/cron reads before the fields.
var tzPrefixes = []string{"CRON_TZ=", "TZ="}

// Zone returns the time zone prefix of expr ("CRON_TZ=Europe/Berlin"), or
// "" when it has none.
func Zone(expr string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(expr), " ")
	for _, p := range tzPrefixes {
		if strings.HasPrefix(first, p) {
			return first
		}
	}
	return ""
}

// InZoneOf returns expr read in the time zone of other: expr as it is when
// it names a zone of its own or other names none, else other's prefix
// before it. A Plan's drill schedule is read in its backup schedule's zone
// this way.
func InZoneOf(expr, other string) string {
	zone := Zone(other)
	if zone == "" || Zone(expr) != "" {
		return expr
	}
	return zone + " " + strings.TrimSpace(expr)
}

// Parse reads a standard five-field cron expression (or a descriptor such
// as @daily or @every 1h), optionally after a `CRON_TZ=<IANA name> ` prefix;
// without one it is read in UTC, never in the controller's local zone, so a
// schedule means the same thing wherever the driver runs. Jenkins-style H
// terms are first resolved for key (HashKey of the Plan).
func Parse(expr, key string) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("%w: the expression is empty", ErrInvalidCron)
	}
	if zone := Zone(expr); zone != "" {
		_, name, _ := strings.Cut(zone, "=")
		// "Local" would silently depend on the controller's host.
		if _, err := time.LoadLocation(name); err != nil || name == "Local" || name == "" {
			return nil, fmt.Errorf("%w: %q is not an IANA time zone name", ErrInvalidTimeZone, name)
		}
	}
	resolved, err := hashcron.Resolve(expr, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidCron, expr, err)
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
	if Zone(expr) == "" {
		spec.Location = time.UTC
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
