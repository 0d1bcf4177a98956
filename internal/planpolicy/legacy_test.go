package planpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A Plan written for the driver's earlier CRD, as the API server returns
// it unstructured.
func legacySpec() map[string]any {
	return map[string]any{
		"applicationRef":             map[string]any{"kind": "Etcd", "name": "etcd"},
		"backupClassName":            "etcd",
		"schedule":                   map[string]any{"cron": "H 3 * * *", "timeZone": "Europe/Berlin"},
		"retention":                  map[string]any{"keepLast": int64(7), "maxAge": "720h0m0s"},
		"drill":                      map[string]any{"cron": "0 4 * * 0", "window": "192h0m0s"},
		"suspend":                    false,
		"concurrencyPolicy":          "Allow",
		"startingDeadlineSeconds":    int64(600),
		"successfulJobsHistoryLimit": int64(5),
		"failedJobsHistoryLimit":     int64(0),
	}
}

func TestMigrate(t *testing.T) {
	g := NewWithT(t)
	m := Migrate(legacySpec(), nil)
	g.Expect(m.Conflicts).To(BeEmpty())
	g.Expect(m.Annotations).To(Equal(map[string]string{
		RetentionKeepLast: "7", RetentionMaxAge: "720h0m0s", DrillSchedule: "0 4 * * 0", DrillWindow: "192h0m0s",
		ConcurrencyPolicy: "Allow", StartingDeadlineSeconds: "600", SuccessfulJobsHistoryLimit: "5", FailedJobsHistoryLimit: "0",
	}), "suspend false is the default and is not written")
	g.Expect(m.Cron).To(Equal("CRON_TZ=Europe/Berlin H 3 * * *"))
	g.Expect(m.Moved).To(HaveLen(9))
	// What is moved parses as it meant.
	p := Parse(m.Annotations, Plan{Namespace: "ns", Name: "p", Cron: m.Cron}, Bounds{})
	g.Expect(p.Valid()).To(BeTrue(), p.Summary())
	g.Expect(p.Retention.KeepLast).To(BeEquivalentTo(7))

	// Once moved, nothing is left to do.
	spec := legacySpec()
	spec["schedule"].(map[string]any)["cron"] = m.Cron
	again := Migrate(spec, m.Annotations)
	g.Expect(again.Empty()).To(BeTrue())
	g.Expect(again.Conflicts).To(BeEmpty())

	// An annotation saying the same in other words is no conflict.
	same := map[string]string{RetentionMaxAge: "720h"}
	g.Expect(Migrate(map[string]any{"retention": map[string]any{"maxAge": "720h0m0s"}}, same).Empty()).To(BeTrue())

	// A Plan of Cozystack's CRD has nothing to move.
	g.Expect(Migrate(map[string]any{"schedule": map[string]any{"cron": "0 3 * * *"}}, nil).Empty()).To(BeTrue())
}

// When a setting is held both ways, differently, nothing is written and
// the conflict names both.
func TestMigrateRefusesConflicts(t *testing.T) {
	g := NewWithT(t)
	spec := legacySpec()
	spec["schedule"].(map[string]any)["cron"] = "CRON_TZ=Asia/Tokyo 0 3 * * *"
	m := Migrate(spec, map[string]string{RetentionKeepLast: "3"})
	g.Expect(m.Empty()).To(BeTrue())
	g.Expect(m.Conflicts).To(HaveLen(2))
	g.Expect(m.Conflicts[0].String()).To(Equal(`spec.retention.keepLast is "7" but annotation etcd-backup-driver.cozystack.io/retention-keep-last says "3"`))
	g.Expect(m.Conflicts[1].String()).To(Equal(`spec.schedule.timeZone is "CRON_TZ=Europe/Berlin" but the time zone prefix of spec.schedule.cron says "CRON_TZ=Asia/Tokyo"`))
}

// A held setting applies nothing, as an unreadable one.
func TestHold(t *testing.T) {
	g := NewWithT(t)
	p := Parse(map[string]string{RetentionKeepLast: "2", RetentionMaxAge: "24h", DrillSchedule: "0 4 * * *", SuccessfulJobsHistoryLimit: "1"}, plan, Bounds{})
	for _, a := range []string{RetentionKeepLast, DrillSchedule, SuccessfulJobsHistoryLimit} {
		p.Hold(a)
	}
	g.Expect(p.Retention).To(Equal(Retention{MaxAge: 24 * 3600 * 1e9}))
	g.Expect(p.Drill.Schedule).To(BeNil())
	g.Expect(p.Scheduler.KeepSucceeded).To(Equal(-1))
}
