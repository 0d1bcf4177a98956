package freshness

import (
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
)

// DefaultStaleFactor is how many Plan intervals old an application's newest
// verified backup may be before it counts as stale: with a daily Plan, one
// missed run is noticed twelve hours after it should have happened, and a
// run that is merely slow is not. The chart's EtcdBackupStale alert and
// `ebdctl status` use the same rule.
const DefaultStaleFactor = 1.5

// intervalRuns is how many consecutive runs Interval looks at: enough to
// see a weekend gap in a weekday schedule (about twelve weeks of daily
// runs) while staying cheap.
const intervalRuns = 64

// Interval is the longest gap between consecutive runs of s among the next
// runs after from: the longest a correctly working Plan leaves its
// application without a new backup. Daylight-saving changes make a daily
// schedule's interval 25h. Zero means the schedule never runs.
func Interval(s cronschedule.Schedule, from time.Time) time.Duration {
	var longest time.Duration
	prev := s.Next(from)
	if prev.IsZero() {
		return 0
	}
	for range intervalRuns {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// PlanInterval parses a Plan's cron expression (its CRON_TZ= prefix
// included, H terms resolved for key, cronschedule.HashKey of the Plan) and
// returns its Interval from now.
func PlanInterval(cron, key string, now time.Time) (time.Duration, error) {
	s, err := cronschedule.Parse(cron, key)
	if err != nil {
		return 0, err
	}
	return Interval(s, now), nil
}

// Stale reports whether a backup of the given age is too old for a Plan
// running every interval: older than factor intervals. A zero interval (no
// usable Plan) is never stale by this rule.
func Stale(age, interval time.Duration, factor float64) bool {
	return interval > 0 && age > time.Duration(float64(interval)*factor)
}
