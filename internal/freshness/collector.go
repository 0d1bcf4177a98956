// Package freshness says how fresh each application's backups are: the
// Prometheus collector that derives the driver's per-application backup
// metrics from the Backups and Plans in the manager's cache on every scrape
// (so they are right from the first scrape after a restart, not only after
// the next backup), the Verifier that decides which Backups count, and the
// staleness rule shared with `ebdctl status`.
package freshness

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
)

// Metric names the Collector serves. The chart's alerts and dashboard use them.
const (
	MetricLastSuccess  = "etcd_backup_driver_last_success_timestamp_seconds"
	MetricAge          = "etcd_backup_driver_backup_age_seconds"
	MetricLastSize     = "etcd_backup_driver_last_snapshot_size_bytes"
	MetricVerified     = "etcd_backup_driver_verified_backups"
	MetricUnverified   = "etcd_backup_driver_unverified_backups"
	MetricPlanInterval = "etcd_backup_driver_plan_interval_seconds"
	MetricPlanCreated  = "etcd_backup_driver_plan_created_timestamp_seconds"
	MetricHeld         = "etcd_backup_driver_backups_held_for_content_drop"
)

var (
	appLabels  = []string{"namespace", "application"}
	planLabels = []string{"namespace", "plan", "application"}

	descLastSuccess = prometheus.NewDesc(MetricLastSuccess,
		"Unix time the newest verified Ready Backup of each application was taken.", appLabels, nil)
	descAge = prometheus.NewDesc(MetricAge,
		"Seconds since the newest verified Ready Backup of each application was taken.", appLabels, nil)
	descLastSize = prometheus.NewDesc(MetricLastSize,
		"Stored size of the newest verified Ready Backup of each application.", appLabels, nil)
	descVerified = prometheus.NewDesc(MetricVerified,
		"Verified Ready Backups each application has.", appLabels, nil)
	descUnverified = prometheus.NewDesc(MetricUnverified,
		"Ready Etcd Backups the driver's verifier rejects (not counted anywhere else; possibly forged).", appLabels, nil)
	descHeld = prometheus.NewDesc(MetricHeld,
		"Verified Backups each application has that retention holds because a later Backup dropped content (ContentDrop); a person releases each by removing its annotation.", appLabels, nil)
	descPlanInterval = prometheus.NewDesc(MetricPlanInterval,
		"Longest gap between consecutive runs of each unsuspended Plan with a valid schedule.", planLabels, nil)
	descPlanCreated = prometheus.NewDesc(MetricPlanCreated,
		"Unix time each unsuspended Plan with a valid schedule was created.", planLabels, nil)
)

// Lister is what the Collector reads on each scrape: a cache's store of
// objects. client-go's cache.Store satisfies it.
type Lister interface {
	List() []any
}

// Options are the Collector's inputs.
type Options struct {
	// Backups and Plans list the cached objects.
	Backups, Plans Lister
	// Synced reports whether both caches have synced; until then the
	// Collector serves no per-application series, so a restarting driver
	// never reports a half-listed, falsely stale picture.
	Synced func() bool
	// Verify decides which Backups count; nil means TrustReadyPhase.
	Verify Verifier
	// Held decides which verified Backups count as held for a content
	// drop; nil means none does.
	Held HoldChecker
	// Epoch changes whenever the keys Verify uses change (a key added,
	// rotated or removed): every remembered verdict is then asked again.
	// Nil means the keys never change. Called once per scrape.
	Epoch func() uint64
	// Clock is the time ages are measured against; nil means the real clock.
	Clock clock.PassiveClock
}

// Collector is a prometheus.Collector that computes the per-application
// backup series from the cached Backups and Plans on every scrape.
//
// Scraping allocates little beyond the series it returns: the store's list
// of object pointers, and nothing per Backup once each has been verified
// (verdicts and per-application totals live in maps reused across scrapes).
type Collector struct {
	o Options

	mu        sync.Mutex
	scrape    uint64
	verdicts  map[types.UID]verdict
	apps      map[appKey]appStats
	intervals map[scheduleKey]cachedInterval
	epoch     uint64
}

type verdict struct {
	resourceVersion string
	epoch           uint64
	takenAt         time.Time
	ok              bool
	held            bool
	seen            uint64
}

type appKey struct{ namespace, application string }

type appStats struct {
	newest     time.Time
	size       int64
	verified   int
	unverified int
	// held: verified Backups retention keeps for a content drop.
	held int
}

// scheduleKey identifies a schedule's interval; hashKey is set only for
// schedules with H terms, whose runs differ from Plan to Plan.
type scheduleKey struct{ cron, hashKey string }

type cachedInterval struct {
	interval time.Duration
	valid    bool
	at       time.Time
	seen     uint64
}

// intervalTTL bounds how long a computed Plan interval is reused; it only
// changes around daylight-saving transitions.
const intervalTTL = time.Hour

// New returns a Collector reading o.
func New(o Options) *Collector {
	if o.Verify == nil {
		o.Verify = TrustReadyPhase
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Synced == nil {
		o.Synced = func() bool { return true }
	}
	return &Collector{
		o:         o,
		verdicts:  map[types.UID]verdict{},
		apps:      map[appKey]appStats{},
		intervals: map[scheduleKey]cachedInterval{},
	}
}

// Describe sends the descriptors of every series the Collector serves.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLastSuccess, descAge, descLastSize, descVerified, descUnverified, descHeld, descPlanInterval, descPlanCreated} {
		ch <- d
	}
}

// Collect lists the cached Backups and Plans and sends the series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if !c.o.Synced() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scrape++
	if c.o.Epoch != nil {
		c.epoch = c.o.Epoch()
	}
	now := c.o.Clock.Now()
	c.collectBackups(ch, now)
	c.collectPlans(ch, now)
}

func (c *Collector) collectBackups(ch chan<- prometheus.Metric, now time.Time) {
	clear(c.apps)
	for _, obj := range c.o.Backups.List() {
		b, ok := obj.(*backupsv1alpha1.Backup)
		if !ok || b.DeletionTimestamp != nil || !backupdeletion.IsEtcdBackup(b) {
			continue
		}
		v, decided := c.verdict(b)
		if !decided {
			continue // asked again next scrape
		}
		key := appKey{b.Namespace, applicationLabel(b.Spec.ApplicationRef.Name)}
		st := c.apps[key]
		switch {
		case v.ok:
			st.verified++
			if v.held {
				st.held++
			}
			if v.takenAt.After(st.newest) {
				st.newest = v.takenAt
				st.size = 0
				if b.Status.Artifact != nil {
					st.size = b.Status.Artifact.SizeBytes
				}
			}
		case b.Status.Phase == backupsv1alpha1.BackupPhaseReady:
			st.unverified++
		default:
			continue // Pending or Failed: nothing to report
		}
		c.apps[key] = st
	}
	for uid, v := range c.verdicts {
		if v.seen != c.scrape {
			delete(c.verdicts, uid)
		}
	}
	foldApplications(c.apps)
	for k, st := range c.apps {
		if st.verified > 0 {
			ch <- prometheus.MustNewConstMetric(descLastSuccess, prometheus.GaugeValue, unixSeconds(st.newest), k.namespace, k.application)
			ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, now.Sub(st.newest).Seconds(), k.namespace, k.application)
			ch <- prometheus.MustNewConstMetric(descLastSize, prometheus.GaugeValue, float64(st.size), k.namespace, k.application)
		}
		ch <- prometheus.MustNewConstMetric(descVerified, prometheus.GaugeValue, float64(st.verified), k.namespace, k.application)
		ch <- prometheus.MustNewConstMetric(descUnverified, prometheus.GaugeValue, float64(st.unverified), k.namespace, k.application)
		if st.held > 0 {
			ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(st.held), k.namespace, k.application)
		}
	}
}

// verdict returns the Verifier's answer for b, asking only when b is new
// or changed, or the keys changed, since it was last asked. decided is
// false when the Verifier could not decide now; nothing is remembered then.
func (c *Collector) verdict(b *backupsv1alpha1.Backup) (v verdict, decided bool) {
	v, ok := c.verdicts[b.UID]
	if !ok || v.resourceVersion != b.ResourceVersion || v.epoch != c.epoch {
		takenAt, good, err := c.o.Verify(b)
		if err != nil {
			delete(c.verdicts, b.UID)
			return verdict{}, false
		}
		v = verdict{resourceVersion: b.ResourceVersion, epoch: c.epoch, takenAt: takenAt, ok: good}
		if good && c.o.Held != nil {
			if v.held, err = c.o.Held(b); err != nil {
				delete(c.verdicts, b.UID)
				return verdict{}, false
			}
		}
	}
	v.seen = c.scrape
	c.verdicts[b.UID] = v
	return v, true
}

func (c *Collector) collectPlans(ch chan<- prometheus.Metric, now time.Time) {
	perNamespace := map[string]int{}
	plans := c.o.Plans.List()
	// Name order, so that the Plans past the bound are always the same.
	slices.SortFunc(plans, func(a, b any) int { return strings.Compare(planName(a), planName(b)) })
	for _, obj := range plans {
		p, ok := obj.(*backupsv1alpha1.Plan)
		if !ok || p.DeletionTimestamp != nil || planpolicy.Suspended(p.Annotations) || !isEtcdApplication(p.Spec.ApplicationRef) {
			continue
		}
		interval, ok := c.interval(p.Spec.Schedule, cronschedule.HashKey(p.Namespace, p.Name), now)
		if !ok || perNamespace[p.Namespace] >= MaxSeriesPerNamespace {
			continue
		}
		perNamespace[p.Namespace]++
		app := applicationLabel(p.Spec.ApplicationRef.Name)
		ch <- prometheus.MustNewConstMetric(descPlanInterval, prometheus.GaugeValue, interval.Seconds(), p.Namespace, p.Name, app)
		ch <- prometheus.MustNewConstMetric(descPlanCreated, prometheus.GaugeValue, unixSeconds(p.CreationTimestamp.Time), p.Namespace, p.Name, app)
	}
	for k, v := range c.intervals {
		if v.seen != c.scrape {
			delete(c.intervals, k)
		}
	}
}

// interval returns a schedule's Interval, parsing and computing it at most
// once per intervalTTL; false means the schedule is unusable or never runs
// (the Plan's Error condition says why).
func (c *Collector) interval(s backupsv1alpha1.PlanSchedule, hashKey string, now time.Time) (time.Duration, bool) {
	if s.Type != backupsv1alpha1.PlanScheduleTypeEmpty && s.Type != backupsv1alpha1.PlanScheduleTypeCron {
		return 0, false
	}
	key := scheduleKey{cron: s.Cron}
	if hashcron.Has(s.Cron) {
		key.hashKey = hashKey
	}
	v, ok := c.intervals[key]
	if !ok || now.Sub(v.at) >= intervalTTL || now.Before(v.at) {
		d, err := PlanInterval(s.Cron, hashKey, now)
		v = cachedInterval{interval: d, valid: err == nil && d > 0, at: now}
	}
	v.seen = c.scrape
	c.intervals[key] = v
	return v.interval, v.valid
}

func planName(obj any) string {
	if p, ok := obj.(*backupsv1alpha1.Plan); ok {
		return p.Namespace + "/" + p.Name
	}
	return ""
}

func isEtcdApplication(ref backupsv1alpha1.TypedLocalObjectReference) bool {
	group := ref.APIGroupOrEmpty()
	if group == "" {
		group = backupsv1alpha1.DefaultApplicationAPIGroup
	}
	return ref.Kind == appsv1alpha1.EtcdKind && group == appsv1alpha1.GroupVersion.Group
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
