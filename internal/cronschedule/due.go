package cronschedule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// maxCountedMisses bounds how many missed runs are enumerated one by one; a
// schedule like @every 1s left alone for a year would otherwise cost
// millions of iterations in one reconcile.
const maxCountedMisses = 1000

// Runs is what a schedule asks for at one instant.
type Runs struct {
	// Due is the run to start now, or zero when none is due.
	Due time.Time
	// Missed counts runs that are older than the starting deadline and are
	// skipped rather than started late (at least this many if Truncated).
	Missed int
	// Superseded counts runs inside the deadline that a newer due run
	// replaces: at most one run starts per reconcile, never a burst.
	Superseded int
	// LastSkipped is the newest skipped run, or zero.
	LastSkipped time.Time
	// Truncated is true when Missed stopped counting at its bound.
	Truncated bool
	// Next is the first run strictly after now.
	Next time.Time
}

// DueRuns decides which run of s to start at now, given that every run at or
// before after has already been started or skipped. A run may start until
// deadline after its scheduled time; older runs are skipped and counted, and
// of several runs within the deadline only the newest starts.
func DueRuns(s Schedule, after, now time.Time, deadline time.Duration) Runs {
	var r Runs
	windowStart := now.Add(-deadline)
	t := s.Next(after)
	for !t.IsZero() && !t.After(now) && t.Before(windowStart) {
		r.Missed++
		r.LastSkipped = t
		if r.Missed >= maxCountedMisses {
			// Jump to the deadline window instead of walking every run.
			r.Truncated = true
			t = jumpTo(s, t, windowStart)
			for !t.IsZero() && t.Before(windowStart) {
				r.LastSkipped = t
				t = s.Next(t)
			}
			break
		}
		t = s.Next(t)
	}
	for !t.IsZero() && !t.After(now) {
		if !r.Due.IsZero() {
			r.Superseded++
			r.LastSkipped = r.Due
		}
		r.Due = t
		t = s.Next(t)
	}
	r.Next = t
	return r
}

// jumpTo returns a run of s at or after t, near but not after from when
// possible, without walking every run in between. An @every schedule is
// anchored on its previous run, so it jumps by whole intervals to keep its
// phase; a cron schedule is anchored on the clock.
func jumpTo(s Schedule, t, from time.Time) time.Time {
	if every, ok := s.(cron.ConstantDelaySchedule); ok && every.Delay > 0 {
		if gap := from.Sub(t); gap > every.Delay {
			return t.Add(gap / every.Delay * every.Delay)
		}
		return t
	}
	return s.Next(from.Add(-time.Second))
}

// maxNameLength keeps run names usable as label values (the driver's
// owned-by labels carry them), which are limited to 63 characters.
const maxNameLength = 63

// RunName is the deterministic name of the object started for the run of
// prefix (a Plan's name) scheduled at scheduled: <prefix>-<Unix minutes>,
// the name Cozystack's Plan controller gives its BackupJobs too. A name
// longer than 63 characters keeps the minutes and replaces the tail of the
// prefix with a hash of the whole prefix, so distinct Plans never share
// run names.
func RunName(prefix string, scheduled time.Time) string {
	suffix := fmt.Sprintf("-%d", scheduled.Unix()/60)
	if len(prefix)+len(suffix) <= maxNameLength {
		return prefix + suffix
	}
	sum := sha256.Sum256([]byte(prefix))
	hash := "-" + hex.EncodeToString(sum[:])[:8]
	prefix = prefix[:maxNameLength-len(hash)-len(suffix)]
	// A DNS-1123 name cannot have "-" or "." before another "-".
	prefix = strings.TrimRight(prefix, "-.")
	return prefix + hash + suffix
}
