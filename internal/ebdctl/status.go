package ebdctl

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// Backup states of an application, as status shows them.
const (
	StateOK          = "OK"           // a good backup within its Plan's interval
	StateStale       = "STALE"        // the newest good backup is too old for the Plan
	StateMissing     = "MISSING"      // a Plan should have produced a backup by now and none exists
	StateWaiting     = "WAITING"      // a new Plan's first run is not overdue yet
	StateSuspended   = "SUSPENDED"    // every Plan of the application is suspended
	StateInvalidPlan = "INVALID-PLAN" // the Plans' schedules cannot be used
	StateNoPlan      = "NO-PLAN"      // nothing backs the application up on a schedule
)

var stateColour = map[string]string{
	StateOK: colourGreen, StateStale: colourRed, StateMissing: colourRed, StateInvalidPlan: colourRed,
	StateWaiting: colourYellow, StateSuspended: colourYellow, StateNoPlan: colourYellow,
}

func (e *env) statusCommand() *cobra.Command {
	var o listOptions
	factor := freshness.DefaultStaleFactor
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every etcd application's newest good backup against its Plan",
		Long: fmt.Sprintf(`For every Etcd application (with -A: in every namespace), shows its newest
good Backup (Ready, not marked unverified, not failed inspection) and how old it is against its
Plan's interval (the longest gap between two runs of the Plan's schedule).

States: %s (within %.1f intervals), %s (older), %s (no good backup although
the Plan exists for longer than that), %s (a new Plan's first run is not due
yet), %s, %s (the Plan's schedule cannot be used), %s.
The rule is the chart's EtcdBackupStale alert's. With -A, a line follows for
each Etcd strategy whose namespaces share an S3 access key (the strategy's
SharedCredentials condition, the EtcdBackupSharedCredentials alert).`, StateOK, freshness.DefaultStaleFactor, StateStale, StateMissing,
			StateWaiting, StateSuspended, StateInvalidPlan, StateNoPlan),
		Example: `  %[1]s status -A
  %[1]s status -n tenant-a -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			if factor <= 0 {
				return usagef("--stale-factor must be positive")
			}
			return e.runStatus(cmd.Context(), o, factor)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	o.bind(cmd)
	cmd.Flags().Float64Var(&factor, "stale-factor", factor, "a backup older than this many Plan intervals is stale")
	return cmd
}

// StatusRow is one application as status shows it; -o json and -o yaml
// print a list of these.
type StatusRow struct {
	Namespace       string     `json:"namespace"`
	Application     string     `json:"application"`
	State           string     `json:"state"`
	Plans           []string   `json:"plans,omitempty"`
	Schedule        string     `json:"schedule,omitempty"`
	IntervalSeconds int64      `json:"intervalSeconds,omitempty"`
	NextRun         *time.Time `json:"nextRun,omitempty"`
	LastBackup      string     `json:"lastBackup,omitempty"`
	TakenAt         *time.Time `json:"takenAt,omitempty"`
	AgeSeconds      int64      `json:"ageSeconds,omitempty"`
	SizeBytes       int64      `json:"sizeBytes,omitempty"`
	GoodBackups     int        `json:"goodBackups"`
	Message         string     `json:"message"`
	// LastRehearsal is the application's newest rehearsal (dry-run
	// restore) that ended: the newest of its Plans' and its Backups'.
	LastRehearsal *driverv1alpha1.RehearsalRecord `json:"lastRehearsal,omitempty"`
	// PointInTime are the application's point-in-time windows (one per
	// Plan that captures it).
	PointInTime []PointInTimeRow `json:"pointInTime,omitempty"`
}

func (e *env) runStatus(ctx context.Context, o listOptions, factor float64) error {
	c, err := e.newClient()
	if err != nil {
		return err
	}
	opts, err := e.scope(o.allNamespaces)
	if err != nil {
		return err
	}
	var plans backupsv1alpha1.PlanList
	if err := c.List(ctx, &plans, opts...); err != nil {
		return fmt.Errorf("list Plans: %w", err)
	}
	var backups backupsv1alpha1.BackupList
	if err := c.List(ctx, &backups, opts...); err != nil {
		return fmt.Errorf("list Backups: %w", err)
	}
	// Applications without any Plan or Backup are shown too, when their
	// objects are readable; a user who may not list them still sees the
	// rest.
	var apps appsv1alpha1.EtcdList
	if err := c.List(ctx, &apps, opts...); err != nil {
		apps.Items = nil
	}
	now := e.now()
	rows := statusRows(apps.Items, plans.Items, backups.Items, now, factor)
	attachWindows(rows, plans.Items, captureWindows(ctx, c, opts, now))
	// Across all namespaces, say which strategies' tenants share an S3
	// key: after the table, or on stderr beside structured output.
	var shared []string
	if o.allNamespaces {
		shared = sharedCredentialLines(ctx, c)
	}
	if o.output == outputJSON || o.output == outputYAML {
		printSharedCredentials(e.streams.ErrOut, shared, false)
		return writeStructured(e.streams.Out, o.output, RowList[StatusRow]{Items: rows})
	}
	colour, err := e.isTerminal()
	if err != nil {
		return err
	}
	defer printSharedCredentials(e.streams.Out, shared, colour)
	defer printWindows(e.streams.Out, rows, o.allNamespaces)
	if len(rows) == 0 {
		fmt.Fprintln(e.streams.ErrOut, "No Etcd applications, Plans or Backups found.")
		return nil
	}
	t := &table{w: e.streams.Out, colour: colour,
		headers: []string{"APPLICATION", "STATE", "LAST-BACKUP", "AGE", "INTERVAL", "NEXT-RUN", "PLAN"}}
	if o.output == outputWide {
		t.headers = append(t.headers, "SCHEDULE", "SIZE", "GOOD-BACKUPS", "REHEARSAL", "MESSAGE")
	}
	if o.allNamespaces {
		t.headers = append([]string{"NAMESPACE"}, t.headers...)
	}
	for _, r := range rows {
		interval, next, plan := "-", "-", "-"
		if r.IntervalSeconds > 0 {
			interval = duration.HumanDuration(time.Duration(r.IntervalSeconds) * time.Second)
		}
		if r.NextRun != nil {
			next = duration.HumanDuration(r.NextRun.Sub(now))
		}
		if len(r.Plans) > 0 {
			plan = r.Plans[0]
			if len(r.Plans) > 1 {
				plan += fmt.Sprintf(" (+%d)", len(r.Plans)-1)
			}
		}
		cells := []string{r.Application, r.State, orDash(r.LastBackup), age(now, timeOr(r.TakenAt)), interval, next, plan}
		if o.output == outputWide {
			cells = append(cells, orDash(r.Schedule), humanBytes(r.SizeBytes), fmt.Sprint(r.GoodBackups), rehearsalCell(r.LastRehearsal, now), r.Message)
		}
		col := 1
		if o.allNamespaces {
			cells = append([]string{r.Namespace}, cells...)
			col++
		}
		added := t.add(cells...)
		added.colourCol, added.colour = col, stateColour[r.State]
	}
	return t.flush()
}

type appID struct{ namespace, name string }

// appFacts gathers what status knows about one application.
type appFacts struct {
	plans []backupsv1alpha1.Plan
	good  []*backupsv1alpha1.Backup
	// rehearsal is the newest rehearsal recorded on any of its Plans or
	// Backups.
	rehearsal *driverv1alpha1.RehearsalRecord
}

// noteRehearsal keeps r when it ended after the one kept.
func (f *appFacts) noteRehearsal(r *driverv1alpha1.RehearsalRecord) {
	if r != nil && (f.rehearsal == nil || r.CompletedAt.After(f.rehearsal.CompletedAt.Time)) {
		f.rehearsal = r
	}
}

// statusRows judges every application named by apps, plans or backups.
func statusRows(apps []appsv1alpha1.Etcd, plans []backupsv1alpha1.Plan, backups []backupsv1alpha1.Backup, now time.Time, factor float64) []StatusRow {
	facts := map[appID]*appFacts{}
	get := func(id appID) *appFacts {
		f, ok := facts[id]
		if !ok {
			f = &appFacts{}
			facts[id] = f
		}
		return f
	}
	for _, a := range apps {
		get(appID{a.Namespace, a.Name})
	}
	for _, p := range plans {
		if isEtcdRef(p.Spec.ApplicationRef) && p.DeletionTimestamp == nil {
			f := get(appID{p.Namespace, p.Spec.ApplicationRef.Name})
			f.plans = append(f.plans, p)
			f.noteRehearsal(planRehearsal(&p))
		}
	}
	for i := range backups {
		b := &backups[i]
		if !isEtcdRef(b.Spec.ApplicationRef) {
			continue
		}
		f := get(appID{b.Namespace, b.Spec.ApplicationRef.Name})
		f.noteRehearsal(artifact.LastRehearsal(b))
		if goodbackup.Sound(b, goodbackup.ShownVerified(b)) {
			f.good = append(f.good, b)
		}
	}
	rows := make([]StatusRow, 0, len(facts))
	for id, f := range facts {
		rows = append(rows, judge(id, f, now, factor))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Application < rows[j].Application
	})
	return rows
}

// judge computes one application's row.
func judge(id appID, f *appFacts, now time.Time, factor float64) StatusRow {
	r := StatusRow{Namespace: id.namespace, Application: id.name, GoodBackups: len(f.good), LastRehearsal: f.rehearsal}
	var newest *backupsv1alpha1.Backup
	for _, b := range f.good {
		if newest == nil || b.Spec.TakenAt.After(newest.Spec.TakenAt.Time) {
			newest = b
		}
	}
	var backupAge time.Duration
	if newest != nil {
		t := newest.Spec.TakenAt.Time
		backupAge = now.Sub(t)
		r.LastBackup, r.TakenAt, r.AgeSeconds = newest.Name, &t, int64(backupAge.Seconds())
		if newest.Status.Artifact != nil {
			r.SizeBytes = newest.Status.Artifact.SizeBytes
		}
	}

	// The most demanding active Plan sets the expectation.
	var (
		active   *backupsv1alpha1.Plan
		interval time.Duration
		invalid  []string
		paused   int
	)
	for i := range f.plans {
		p := &f.plans[i]
		r.Plans = append(r.Plans, p.Name)
		if planpolicy.Suspended(p.Annotations) {
			paused++
			continue
		}
		d, err := freshness.PlanInterval(p.Spec.Schedule.Cron, cronschedule.HashKey(p.Namespace, p.Name), now)
		if err != nil || d == 0 {
			invalid = append(invalid, p.Name)
			continue
		}
		if active == nil || d < interval {
			active, interval = p, d
		}
	}
	sort.Strings(r.Plans)
	limit := time.Duration(float64(interval) * factor)
	switch {
	case active != nil:
		r.Plans = append([]string{active.Name}, without(r.Plans, active.Name)...)
		r.Schedule, r.IntervalSeconds, r.NextRun = scheduleOf(active), int64(interval.Seconds()), nextRun(active, now)
		switch planAge := now.Sub(active.CreationTimestamp.Time); {
		case newest != nil && !freshness.Stale(backupAge, interval, factor):
			r.State = StateOK
			r.Message = fmt.Sprintf("newest good backup is %s old; Plan %s runs at least every %s", short(backupAge), active.Name, short(interval))
		case newest != nil:
			r.State = StateStale
			r.Message = fmt.Sprintf("newest good backup is %s old, over %s (%.1f × the %s interval of Plan %s)", short(backupAge), short(limit), factor, short(interval), active.Name)
		case planAge > limit:
			r.State = StateMissing
			r.Message = fmt.Sprintf("no good backup although Plan %s (every %s) exists for %s", active.Name, short(interval), short(planAge))
		default:
			r.State = StateWaiting
			r.Message = fmt.Sprintf("no good backup yet; Plan %s is %s old (first run due within %s)", active.Name, short(planAge), short(interval))
		}
	case len(invalid) > 0:
		r.State = StateInvalidPlan
		r.Message = fmt.Sprintf("the schedule of Plan %s cannot be used (see its Error condition)", invalid[0])
	case paused > 0:
		r.State = StateSuspended
		r.Message = "every Plan of the application is suspended"
	default:
		r.State = StateNoPlan
		r.Message = "no Plan backs the application up on a schedule"
	}
	if newest == nil && r.State != StateMissing && r.State != StateWaiting {
		r.Message += "; no good backup"
	}
	return r
}

// scheduleOf is the Plan's cron expression and, when it has H terms, what
// they resolve to for this Plan.
func scheduleOf(p *backupsv1alpha1.Plan) string {
	expr := p.Spec.Schedule.Cron
	if !hashcron.Has(expr) {
		return expr
	}
	resolved, err := hashcron.Resolve(strings.TrimSpace(expr), cronschedule.HashKey(p.Namespace, p.Name))
	if err != nil {
		return expr
	}
	return expr + " = " + resolved
}

// nextRun is the Plan's next run: as the driver's scheduler recorded it on
// the Plan, or, where another scheduler runs it (Cozystack's Plan
// controller), the next time of its schedule after now, computed as the
// driver does.
func nextRun(p *backupsv1alpha1.Plan, now time.Time) *time.Time {
	if rec, ok := planrecord.Peek(p); ok && rec.NextScheduleTime != nil {
		return &rec.NextScheduleTime.Time
	}
	s, err := cronschedule.Parse(p.Spec.Schedule.Cron, cronschedule.HashKey(p.Namespace, p.Name))
	if err != nil {
		return nil
	}
	if next := s.Next(now); !next.IsZero() {
		return &next
	}
	return nil
}

// planRehearsal is the newest drill of p as the driver recorded it on p.
func planRehearsal(p *backupsv1alpha1.Plan) *driverv1alpha1.RehearsalRecord {
	rec, ok := planrecord.Peek(p)
	if !ok || rec.LastRehearsal == nil {
		return nil
	}
	r := rec.LastRehearsal
	return &driverv1alpha1.RehearsalRecord{RestoreJob: r.RestoreJob, Backup: r.Backup, Succeeded: r.Succeeded, CompletedAt: r.CompletedAt, Message: r.Message}
}

func without(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

func short(d time.Duration) string {
	return duration.HumanDuration(d)
}

// rehearsalCell is the REHEARSAL column: how the newest rehearsal ended
// and how long ago ("OK 3h", "FAILED 2d"), or "-".
func rehearsalCell(r *driverv1alpha1.RehearsalRecord, now time.Time) string {
	if r == nil {
		return "-"
	}
	outcome := "OK"
	if !r.Succeeded {
		outcome = "FAILED"
	}
	return outcome + " " + age(now, r.CompletedAt.Time)
}
