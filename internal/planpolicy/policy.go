package planpolicy

import (
	"fmt"
	"strings"
	"time"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Defaults of the settings a Plan does not make (retention has none of its
// own: the admin's Bounds say).
const (
	DefaultDrillWindow                = 192 * time.Hour
	DefaultStartingDeadline           = 300 * time.Second
	DefaultSuccessfulJobsHistoryLimit = 3
	DefaultFailedJobsHistoryLimit     = 1
)

// Bounds are the platform admin's retention defaults and limits for the
// Plans of one Etcd strategy (its StrategyPolicy's spec.retention). A zero
// field means none.
type Bounds struct {
	// DefaultKeepLast and DefaultMaxAge apply to a Plan that sets none.
	DefaultKeepLast int32
	DefaultMaxAge   time.Duration
	// MaxKeepLast and MaxMaxAge are the most a Plan may keep; a larger
	// value, or none at all, is clamped to them.
	MaxKeepLast int32
	MaxMaxAge   time.Duration
}

// Plan is what Parse needs of the Plan besides its annotations.
type Plan struct {
	Namespace, Name string
	// Cron is spec.schedule.cron: a drill schedule without a time zone of
	// its own is read in this one's.
	Cron string
}

// Retention is what retention applies; zero fields prune nothing.
type Retention struct {
	// KeepLast keeps at most this many Backups, newest first.
	KeepLast int32
	// MaxAge deletes Backups taken longer ago than this.
	MaxAge time.Duration
}

// Prunes reports whether any rule applies.
func (r Retention) Prunes() bool { return r.KeepLast > 0 || r.MaxAge > 0 }

// Drill is the Plan's drill, when it asks for one.
type Drill struct {
	// Expr is the schedule as read, in the Plan's time zone.
	Expr string
	// Schedule is nil when Expr does not parse (Problems says why): no
	// drill runs, and RehearsalOverdue is still judged.
	Schedule cronschedule.Schedule
	// Window is how long the application may go without a successful
	// rehearsal.
	Window time.Duration
}

// Concurrency is the driver's scheduler's concurrency policy.
type Concurrency string

// Concurrency policies.
const (
	// Forbid skips a run while another BackupJob for the application runs.
	Forbid Concurrency = "Forbid"
	// Allow starts runs regardless.
	Allow Concurrency = "Allow"
)

// Scheduler are the settings of the driver's own scheduler.
type Scheduler struct {
	Suspend          bool
	Concurrency      Concurrency
	StartingDeadline time.Duration
	// KeepSucceeded and KeepFailed are how many finished BackupJobs of each
	// kind are kept; negative keeps them all (the limit did not parse).
	KeepSucceeded, KeepFailed int
}

// Problem is an annotation whose value does not parse.
type Problem struct {
	Annotation string
	Value      string
	// Want says what the value must be.
	Want string
}

func (p Problem) String() string {
	return fmt.Sprintf("annotation %s is %q, which is not %s", p.Annotation, textlimit.Value(p.Value), p.Want)
}

// Policy is what applies to a Plan.
type Policy struct {
	Retention Retention
	// Drill is nil when the Plan asks for none.
	Drill *Drill
	// PointInTime: the Plan asks for its application's changes to be
	// captured (whether the platform allows it is the StrategyPolicy's).
	PointInTime bool
	Scheduler   Scheduler
	// Problems are the annotations that did not parse: none of them applies.
	Problems []Problem
	// Notes say where a bound or an admin's default replaced what the Plan
	// says, for its condition.
	Notes []string
}

// Valid reports whether every annotation parsed.
func (p Policy) Valid() bool { return len(p.Problems) == 0 }

// Parse reads the policy of plan from its annotations within bounds.
func Parse(annotations map[string]string, plan Plan, bounds Bounds) Policy {
	r := reader{annotations: annotations}
	p := Policy{}
	p.Retention = r.retention(bounds)
	p.Drill = r.drill(plan)
	p.PointInTime = r.flag(PointInTime)
	p.Scheduler = r.scheduler()
	p.Problems, p.Notes = r.problems, r.notes
	return p
}

// ParsePlan is Parse of plan's annotations.
func ParsePlan(plan *backupsv1alpha1.Plan, bounds Bounds) Policy {
	return Parse(plan.Annotations, Plan{Namespace: plan.Namespace, Name: plan.Name, Cron: plan.Spec.Schedule.Cron}, bounds)
}

// DrillHashKey is what the H terms of a Plan's drill schedule are hashed
// with: not the backup schedule's key, so an "H" drill does not land on
// the minute its own backups start.
func DrillHashKey(namespace, name string) string {
	return cronschedule.HashKey(namespace, name) + "/drill"
}

func (r *reader) retention(b Bounds) Retention {
	var ret Retention
	keep, set, ok := r.int(RetentionKeepLast, 1, 1<<31-1, "an integer of at least 1")
	switch {
	case !ok:
	case !set:
		ret.KeepLast = b.DefaultKeepLast
		if ret.KeepLast > 0 {
			r.note("%s is not set: the platform's default of %d applies", Short(RetentionKeepLast), ret.KeepLast)
		}
		ret.KeepLast = r.clampCount(ret.KeepLast, b.MaxKeepLast, "the platform's default")
	default:
		ret.KeepLast = r.clampCount(int32(keep), b.MaxKeepLast, Short(RetentionKeepLast))
	}
	age, set, ok := r.duration(RetentionMaxAge)
	switch {
	case !ok:
	case !set:
		ret.MaxAge = b.DefaultMaxAge
		if ret.MaxAge > 0 {
			r.note("%s is not set: the platform's default of %s applies", Short(RetentionMaxAge), ret.MaxAge)
		}
		ret.MaxAge = r.clampAge(ret.MaxAge, b.MaxMaxAge, "the platform's default")
	default:
		ret.MaxAge = r.clampAge(age, b.MaxMaxAge, Short(RetentionMaxAge))
	}
	return ret
}

// clampCount keeps v (0: keep all) within max (0: none).
func (r *reader) clampCount(v, max int32, what string) int32 {
	switch {
	case max <= 0:
		return v
	case v == 0:
		r.note("%s is not set: the platform's maximum of %d applies", Short(RetentionKeepLast), max)
		return max
	case v > max:
		r.note("%s %d is above the platform's maximum of %d: %d applies", what, v, max, max)
		return max
	}
	return v
}

// clampAge keeps v (0: keep for ever) within max (0: none).
func (r *reader) clampAge(v, max time.Duration, what string) time.Duration {
	switch {
	case max <= 0:
		return v
	case v == 0:
		r.note("%s is not set: the platform's maximum of %s applies", Short(RetentionMaxAge), max)
		return max
	case v > max:
		r.note("%s %s is above the platform's maximum of %s: %s applies", what, v, max, max)
		return max
	}
	return v
}

func (r *reader) drill(plan Plan) *Drill {
	expr, ok := r.annotations[DrillSchedule]
	if !ok {
		return nil
	}
	d := &Drill{Expr: cronschedule.InZoneOf(expr, plan.Cron), Window: DefaultDrillWindow}
	if s, err := cronschedule.Parse(d.Expr, DrillHashKey(plan.Namespace, plan.Name)); err != nil {
		r.problem(DrillSchedule, expr, "a cron expression the driver can read ("+err.Error()+")")
	} else {
		d.Schedule = s
	}
	if w, set, ok := r.duration(DrillWindow); ok && set {
		d.Window = w
	}
	return d
}

func (r *reader) scheduler() Scheduler {
	s := Scheduler{
		Concurrency:      Forbid,
		StartingDeadline: DefaultStartingDeadline,
		KeepSucceeded:    DefaultSuccessfulJobsHistoryLimit,
		KeepFailed:       DefaultFailedJobsHistoryLimit,
	}
	s.Suspend = r.flag(Suspend)
	if v, ok := r.annotations[ConcurrencyPolicy]; ok {
		switch Concurrency(v) {
		case Forbid, Allow:
			s.Concurrency = Concurrency(v)
		default:
			r.problem(ConcurrencyPolicy, v, `"Forbid" or "Allow"`)
		}
	}
	if n, set, ok := r.int(StartingDeadlineSeconds, 1, maxDeadlineSeconds, fmt.Sprintf("an integer from 1 to %d", maxDeadlineSeconds)); ok && set {
		s.StartingDeadline = time.Duration(n) * time.Second
	}
	s.KeepSucceeded = r.limit(SuccessfulJobsHistoryLimit, s.KeepSucceeded)
	s.KeepFailed = r.limit(FailedJobsHistoryLimit, s.KeepFailed)
	return s
}

// Suspended reports whether the Plan's annotations suspend the driver's
// scheduler (and its drills): exactly "true".
func Suspended(annotations map[string]string) bool {
	return annotations[Suspend] == "true"
}

// flag reads an on/off setting: exactly "true" is on; "false" or no
// annotation is off; anything else is off and a problem.
func (r *reader) flag(annotation string) bool {
	v, ok := r.annotations[annotation]
	if ok && v != "true" && v != "false" {
		r.problem(annotation, v, `"true" or "false"`)
	}
	return v == "true"
}

// maxDeadlineSeconds (ten years) keeps a starting deadline a Duration.
const maxDeadlineSeconds = 10 * 365 * 24 * 3600

// limit reads a history limit: def when unset, -1 (keep all) when it does
// not parse, since a bad limit must not delete anything.
func (r *reader) limit(annotation string, def int) int {
	n, set, ok := r.int(annotation, 0, 1<<31-1, "an integer of at least 0")
	switch {
	case !ok:
		return -1
	case !set:
		return def
	}
	return int(n)
}

// Summary is the Plan's policy in words, for its condition: what applies
// and where a bound or default replaced what the Plan says.
func (p Policy) Summary() string {
	var parts []string
	for _, pr := range p.Problems {
		parts = append(parts, pr.String()+"; it is not applied")
	}
	parts = append(parts, p.Notes...)
	if len(parts) == 0 {
		return "the Plan's settings are valid"
	}
	return strings.Join(parts, "; ")
}

// Hold makes annotation apply nothing, as if it did not parse: retention
// by it prunes nothing, a held drill schedule runs no drill, a held
// scheduler setting has its default (a history limit keeps every job).
// The driver holds a setting it cannot tell the tenant meant (two places
// say it differently).
func (p *Policy) Hold(annotation string) {
	switch annotation {
	case RetentionKeepLast:
		p.Retention.KeepLast = 0
	case RetentionMaxAge:
		p.Retention.MaxAge = 0
	case DrillSchedule:
		if p.Drill != nil {
			p.Drill.Schedule = nil
		}
	case DrillWindow:
		if p.Drill != nil {
			p.Drill.Window = DefaultDrillWindow
		}
	case PointInTime:
		p.PointInTime = false
	case Suspend:
		p.Scheduler.Suspend = false
	case ConcurrencyPolicy:
		p.Scheduler.Concurrency = Forbid
	case StartingDeadlineSeconds:
		p.Scheduler.StartingDeadline = DefaultStartingDeadline
	case SuccessfulJobsHistoryLimit:
		p.Scheduler.KeepSucceeded = -1
	case FailedJobsHistoryLimit:
		p.Scheduler.KeepFailed = -1
	}
}
