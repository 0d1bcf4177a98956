package planpolicy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Legacy is a setting a Plan holds in a field of the driver's earlier Plan
// CRD, whose spec was a superset of Cozystack's: where the old CRD is still
// installed (Helm does not upgrade a chart's crds/), a Plan written then
// keeps those fields, and the driver moves them to where they live now.
type Legacy struct {
	// Field is the old field's path (spec.retention.keepLast).
	Field string
	// Annotation holds the setting now; "" for spec.schedule.timeZone,
	// which becomes the CRON_TZ= prefix of spec.schedule.cron.
	Annotation string
	// Value is the field's value as the annotation (or the prefix) says it.
	Value string
	// Current is what the annotation (or the prefix) says now; "" nothing.
	Current string
}

func (l Legacy) String() string {
	where := "annotation " + l.Annotation
	if l.Annotation == "" {
		where = "the time zone prefix of spec.schedule.cron"
	}
	return fmt.Sprintf("%s is %q but %s says %q", l.Field, textlimit.Value(l.Value), where, textlimit.Value(l.Current))
}

// Migration is what moving a Plan's legacy settings takes.
type Migration struct {
	// Annotations to add (none is written when there are Conflicts).
	Annotations map[string]string
	// Cron is the new spec.schedule.cron ("" leaves it).
	Cron string
	// Moved are the settings the writes move; Conflicts those held both
	// ways, differently.
	Moved, Conflicts []Legacy
}

// Empty reports whether there is nothing to write.
func (m Migration) Empty() bool { return len(m.Annotations) == 0 && m.Cron == "" }

// legacyFields maps the old fields to the annotations that hold them now.
var legacyFields = []struct {
	path       []string
	annotation string
}{
	{[]string{"retention", "keepLast"}, RetentionKeepLast},
	{[]string{"retention", "maxAge"}, RetentionMaxAge},
	{[]string{"drill", "cron"}, DrillSchedule},
	{[]string{"drill", "window"}, DrillWindow},
	{[]string{"suspend"}, Suspend},
	{[]string{"concurrencyPolicy"}, ConcurrencyPolicy},
	{[]string{"startingDeadlineSeconds"}, StartingDeadlineSeconds},
	{[]string{"successfulJobsHistoryLimit"}, SuccessfulJobsHistoryLimit},
	{[]string{"failedJobsHistoryLimit"}, FailedJobsHistoryLimit},
}

// Migrate reads the legacy settings of spec (an unstructured Plan's) and
// says what to write so that annotations (the Plan's now) hold them: a
// setting the annotations hold already with the same meaning is neither
// moved nor in conflict; one they hold differently is a conflict.
func Migrate(spec map[string]any, annotations map[string]string) Migration {
	m := Migration{Annotations: map[string]string{}}
	for _, f := range legacyFields {
		v, ok := scalar(spec, f.path...)
		if !ok || (f.annotation == Suspend && v == "false") {
			continue
		}
		l := Legacy{Field: "spec." + strings.Join(f.path, "."), Annotation: f.annotation, Value: v}
		cur, has := annotations[f.annotation]
		switch {
		case !has:
			m.Annotations[f.annotation] = v
			m.Moved = append(m.Moved, l)
		case !sameSetting(f.annotation, cur, v):
			l.Current = cur
			m.Conflicts = append(m.Conflicts, l)
		}
	}
	if tz, ok := scalar(spec, "schedule", "timeZone"); ok && tz != "" {
		cron, _ := scalar(spec, "schedule", "cron")
		l := Legacy{Field: "spec.schedule.timeZone", Value: "CRON_TZ=" + tz}
		switch zone := cronschedule.Zone(cron); {
		case zone == "":
			m.Cron = l.Value + " " + strings.TrimSpace(cron)
			m.Moved = append(m.Moved, l)
		case strings.TrimPrefix(strings.TrimPrefix(zone, "CRON_TZ="), "TZ=") != tz:
			l.Current = zone
			m.Conflicts = append(m.Conflicts, l)
		}
	}
	if len(m.Conflicts) > 0 {
		m.Annotations, m.Cron = nil, ""
	}
	return m
}

// scalar reads the value at path as an annotation would say it.
func scalar(obj map[string]any, path ...string) (string, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[p]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

// sameSetting reports whether two values of annotation mean the same.
func sameSetting(annotation, a, b string) bool {
	if a == b {
		return true
	}
	switch annotation {
	case RetentionMaxAge, DrillWindow:
		da, errA := time.ParseDuration(a)
		db, errB := time.ParseDuration(b)
		return errA == nil && errB == nil && da == db
	}
	return false
}
