// Package planpolicy reads a tenant's choices for its Plan: the
// etcd-backup-driver.cozystack.io/* annotations on the Plan (Cozystack's
// Plan CRD serves only applicationRef, backupClassName and schedule, and
// annotations are served on every object). It is the one place that
// parses and validates them, within the platform admin's bounds
// (StrategyPolicy spec.retention), and says what applies and why.
//
// Rules: a Plan that sets nothing gets the admin's defaults; a value above
// a bound is clamped to the bound (and Policy.Notes says so); a value that
// does not parse applies nothing for that setting (Policy.Problems names
// it): an unreadable retention prunes nothing, an unreadable drill
// schedule runs no drill.
package planpolicy

import "strings"

// Prefix starts every annotation of the driver's on a Plan.
const Prefix = "etcd-backup-driver.cozystack.io/"

// The tenant's settings. Retention and drills apply to the Plan's Backups
// whoever schedules the Plan (Cozystack's Plan controller or the driver's);
// the scheduler settings only to the driver's own scheduler.
const (
	// RetentionKeepLast: keep at most this many Backups (integer >= 1).
	RetentionKeepLast = Prefix + "retention-keep-last"
	// RetentionMaxAge: delete Backups taken longer ago than this (a Go
	// duration, for example 720h).
	RetentionMaxAge = Prefix + "retention-max-age"
	// DrillSchedule: when to rehearse the newest good Backup (cron, H
	// terms allowed), in the time zone of spec.schedule.cron unless it
	// names one of its own (CRON_TZ=...).
	DrillSchedule = Prefix + "drill-schedule"
	// DrillWindow: how long the application may go without a successful
	// rehearsal before RehearsalOverdue (a Go duration; default 192h).
	DrillWindow = Prefix + "drill-window"
	// PointInTime ("true"): capture every change of the Plan's
	// application after its newest good Backup, so a restore can go to
	// any second since (within the platform's StrategyPolicy
	// spec.pointInTime; docs/point-in-time.md).
	PointInTime = Prefix + "point-in-time"

	// Suspend ("true"): the driver's scheduler starts no runs and no drills.
	Suspend = Prefix + "suspend"
	// ConcurrencyPolicy: Forbid (default) or Allow a run while another
	// BackupJob for the application runs.
	ConcurrencyPolicy = Prefix + "concurrency-policy"
	// StartingDeadlineSeconds: a run (or drill) later than this is skipped
	// (integer >= 1; default 300).
	StartingDeadlineSeconds = Prefix + "starting-deadline-seconds"
	// SuccessfulJobsHistoryLimit: Succeeded BackupJobs kept (integer >= 0;
	// default 3).
	SuccessfulJobsHistoryLimit = Prefix + "successful-jobs-history-limit"
	// FailedJobsHistoryLimit: Failed BackupJobs kept (integer >= 0;
	// default 1).
	FailedJobsHistoryLimit = Prefix + "failed-jobs-history-limit"
)

// Settings lists every annotation this package reads, in the order
// messages name them.
var Settings = []string{
	RetentionKeepLast, RetentionMaxAge, DrillSchedule, DrillWindow, PointInTime,
	Suspend, ConcurrencyPolicy, StartingDeadlineSeconds, SuccessfulJobsHistoryLimit, FailedJobsHistoryLimit,
}

// Short is an annotation's name without Prefix ("retention-keep-last").
func Short(annotation string) string {
	return strings.TrimPrefix(annotation, Prefix)
}

// Reason is the condition reason naming an invalid annotation:
// "Invalid" and its short name in CamelCase (InvalidRetentionKeepLast),
// which fits the reason pattern of a condition.
func Reason(annotation string) string {
	var b strings.Builder
	b.WriteString("Invalid")
	for _, w := range strings.Split(Short(annotation), "-") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
