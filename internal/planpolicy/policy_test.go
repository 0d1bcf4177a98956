package planpolicy

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

var plan = Plan{Namespace: "tenant", Name: "nightly", Cron: "CRON_TZ=Europe/Berlin 0 3 * * *"}

func TestRetention(t *testing.T) {
	bounded := Bounds{DefaultKeepLast: 7, DefaultMaxAge: 720 * time.Hour, MaxKeepLast: 30, MaxMaxAge: 2160 * time.Hour}
	for name, tc := range map[string]struct {
		ann      map[string]string
		bounds   Bounds
		want     Retention
		problems []string
		notes    []string
	}{
		"nothing set, no bounds: nothing is pruned": {},
		"nothing set: the admin's defaults": {
			bounds: bounded, want: Retention{KeepLast: 7, MaxAge: 720 * time.Hour},
			notes: []string{"retention-keep-last is not set: the platform's default of 7 applies", "retention-max-age is not set: the platform's default of 720h0m0s applies"},
		},
		"the Plan's values within the bounds": {
			ann:    map[string]string{RetentionKeepLast: "3", RetentionMaxAge: "48h"},
			bounds: bounded, want: Retention{KeepLast: 3, MaxAge: 48 * time.Hour},
		},
		"values above the bounds are clamped": {
			ann:    map[string]string{RetentionKeepLast: "500", RetentionMaxAge: "8760h"},
			bounds: bounded, want: Retention{KeepLast: 30, MaxAge: 2160 * time.Hour},
			notes: []string{"retention-keep-last 500 is above the platform's maximum of 30: 30 applies", "retention-max-age 8760h0m0s is above the platform's maximum of 2160h0m0s: 2160h0m0s applies"},
		},
		"a maximum without a default bounds a Plan that sets nothing": {
			bounds: Bounds{MaxKeepLast: 10, MaxMaxAge: time.Hour}, want: Retention{KeepLast: 10, MaxAge: time.Hour},
			notes: []string{"retention-keep-last is not set: the platform's maximum of 10 applies", "retention-max-age is not set: the platform's maximum of 1h0m0s applies"},
		},
		"a default above the maximum is clamped": {
			bounds: Bounds{DefaultKeepLast: 50, MaxKeepLast: 10}, want: Retention{KeepLast: 10},
			notes: []string{"retention-keep-last is not set: the platform's default of 50 applies", "the platform's default 50 is above the platform's maximum of 10: 10 applies"},
		},
		"unparseable values apply nothing, not even the defaults": {
			ann:    map[string]string{RetentionKeepLast: "three", RetentionMaxAge: "a month"},
			bounds: bounded, want: Retention{},
			problems: []string{RetentionKeepLast, RetentionMaxAge},
		},
		"zero is refused": {
			ann: map[string]string{RetentionKeepLast: "0"}, problems: []string{RetentionKeepLast},
		},
		"a sign is refused":  {ann: map[string]string{RetentionKeepLast: "+2"}, problems: []string{RetentionKeepLast}},
		"a space is refused": {ann: map[string]string{RetentionKeepLast: " 2"}, problems: []string{RetentionKeepLast}},
		"too large a count":  {ann: map[string]string{RetentionKeepLast: "99999999999"}, problems: []string{RetentionKeepLast}},
		"a negative age":     {ann: map[string]string{RetentionMaxAge: "-1h"}, problems: []string{RetentionMaxAge}},
		"one bad setting leaves the other": {
			ann:    map[string]string{RetentionKeepLast: "x", RetentionMaxAge: "24h"},
			bounds: bounded, want: Retention{MaxAge: 24 * time.Hour},
			problems: []string{RetentionKeepLast},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := Parse(tc.ann, plan, tc.bounds)
			g.Expect(p.Retention).To(Equal(tc.want))
			g.Expect(annotationsOf(p.Problems)).To(Equal(tc.problems))
			g.Expect(p.Notes).To(Equal(tc.notes))
			g.Expect(p.Valid()).To(Equal(len(tc.problems) == 0))
		})
	}
}

func annotationsOf(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Annotation)
	}
	return out
}

func TestDrill(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Parse(nil, plan, Bounds{}).Drill).To(BeNil())

	p := Parse(map[string]string{DrillSchedule: "0 4 * * 0"}, plan, Bounds{})
	g.Expect(p.Valid()).To(BeTrue())
	g.Expect(p.Drill.Expr).To(Equal("CRON_TZ=Europe/Berlin 0 4 * * 0"), "read in the backup schedule's zone")
	g.Expect(p.Drill.Window).To(Equal(DefaultDrillWindow))
	from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC) // a Saturday
	g.Expect(p.Drill.Schedule.Next(from)).To(Equal(time.Date(2026, 1, 11, 3, 0, 0, 0, time.UTC)))

	p = Parse(map[string]string{DrillSchedule: "CRON_TZ=UTC H 4 * * 0", DrillWindow: "48h"}, plan, Bounds{})
	g.Expect(p.Valid()).To(BeTrue())
	g.Expect(p.Drill.Window).To(Equal(48 * time.Hour))
	g.Expect(p.Drill.Schedule.Next(from).Hour()).To(Equal(4))

	// A bad schedule runs no drill but the window is still judged; a bad
	// window keeps the default.
	p = Parse(map[string]string{DrillSchedule: "weekly", DrillWindow: "a week"}, plan, Bounds{})
	g.Expect(p.Drill).NotTo(BeNil())
	g.Expect(p.Drill.Schedule).To(BeNil())
	g.Expect(p.Drill.Window).To(Equal(DefaultDrillWindow))
	g.Expect(annotationsOf(p.Problems)).To(Equal([]string{DrillSchedule, DrillWindow}))
	g.Expect(p.Summary()).To(ContainSubstring(`annotation etcd-backup-driver.cozystack.io/drill-schedule is "weekly", which is not a cron expression`))

	// The zone of a bad backup schedule makes the drill's unreadable too.
	p = Parse(map[string]string{DrillSchedule: "0 4 * * 0"}, Plan{Cron: "CRON_TZ=Mars/Olympus 0 3 * * *"}, Bounds{})
	g.Expect(p.Drill.Schedule).To(BeNil())
	g.Expect(p.Summary()).To(ContainSubstring("Mars/Olympus"))
}

func TestScheduler(t *testing.T) {
	for name, tc := range map[string]struct {
		ann      map[string]string
		want     Scheduler
		problems []string
	}{
		"defaults": {want: Scheduler{Concurrency: Forbid, StartingDeadline: 300 * time.Second, KeepSucceeded: 3, KeepFailed: 1}},
		"every setting": {
			ann: map[string]string{Suspend: "true", ConcurrencyPolicy: "Allow", StartingDeadlineSeconds: "3600",
				SuccessfulJobsHistoryLimit: "0", FailedJobsHistoryLimit: "5"},
			want: Scheduler{Suspend: true, Concurrency: Allow, StartingDeadline: time.Hour, KeepSucceeded: 0, KeepFailed: 5},
		},
		"bad values: defaults, and bad history limits keep every job": {
			ann: map[string]string{Suspend: "yes", ConcurrencyPolicy: "forbid", StartingDeadlineSeconds: "0",
				SuccessfulJobsHistoryLimit: "-1", FailedJobsHistoryLimit: "one"},
			want:     Scheduler{Concurrency: Forbid, StartingDeadline: 300 * time.Second, KeepSucceeded: -1, KeepFailed: -1},
			problems: []string{Suspend, ConcurrencyPolicy, StartingDeadlineSeconds, SuccessfulJobsHistoryLimit, FailedJobsHistoryLimit},
		},
		"a deadline that would overflow": {
			ann:      map[string]string{StartingDeadlineSeconds: "9999999999999"},
			want:     Scheduler{Concurrency: Forbid, StartingDeadline: 300 * time.Second, KeepSucceeded: 3, KeepFailed: 1},
			problems: []string{StartingDeadlineSeconds},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := Parse(tc.ann, plan, Bounds{})
			g.Expect(p.Scheduler).To(Equal(tc.want))
			g.Expect(annotationsOf(p.Problems)).To(ConsistOf(stringsOrEmpty(tc.problems)...))
		})
	}
}

// Point-in-time capture is on only for exactly "true"; anything but
// "true" or "false" is a problem and leaves it off, as does Hold.
func TestPointInTime(t *testing.T) {
	g := NewWithT(t)
	for v, want := range map[string]bool{"true": true, "false": false, "": false, "yes": false, "True": false} {
		p := Parse(map[string]string{PointInTime: v}, plan, Bounds{})
		g.Expect(p.PointInTime).To(Equal(want), v)
		g.Expect(p.Valid()).To(Equal(v == "true" || v == "false"), v)
	}
	g.Expect(Parse(nil, plan, Bounds{}).PointInTime).To(BeFalse())
	p := Parse(map[string]string{PointInTime: "true"}, plan, Bounds{})
	p.Hold(PointInTime)
	g.Expect(p.PointInTime).To(BeFalse())
	g.Expect(Reason(PointInTime)).To(Equal("InvalidPointInTime"))
}

func stringsOrEmpty(s []string) []any {
	out := []any{}
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// A tenant's value is quoted cut in the condition, and each problem is
// reported with its annotation's full name; reasons fit a condition's
// reason pattern.
func TestSummaryAndReasons(t *testing.T) {
	g := NewWithT(t)
	p := Parse(map[string]string{RetentionKeepLast: strings.Repeat("9", 40<<10)}, plan, Bounds{})
	g.Expect(len(p.Summary())).To(BeNumerically("<", 1024))
	g.Expect(p.Summary()).To(HavePrefix("annotation etcd-backup-driver.cozystack.io/retention-keep-last is"))
	g.Expect(Parse(nil, plan, Bounds{}).Summary()).To(Equal("the Plan's settings are valid"))
	for _, a := range Settings {
		g.Expect(Reason(a)).To(MatchRegexp(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`))
	}
	g.Expect(Reason(RetentionKeepLast)).To(Equal("InvalidRetentionKeepLast"))
}
