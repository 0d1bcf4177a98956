package freshness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
)

var now = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// backup returns a Ready Etcd Backup of app taken ago before now.
func backup(ns, name, app string, ago time.Duration, size int64) *backupsv1alpha1.Backup {
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), ResourceVersion: "1"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: app},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: strategyv1alpha1.EtcdStrategyKind, Name: "s3"},
			TakenAt:        metav1.NewTime(now.Add(-ago)),
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:    backupsv1alpha1.BackupPhaseReady,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://b/" + name, SizeBytes: size},
		},
	}
}

func planFor(ns, name, app, cron string) *backupsv1alpha1.Plan {
	return &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(now.Add(-72 * time.Hour))},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: app},
			Schedule:       backupsv1alpha1.PlanSchedule{Cron: cron},
		},
	}
}

func storeOf(objs ...any) toolscache.Store {
	s := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			panic(err)
		}
	}
	return s
}

// rejectForged is a test Verifier: Backups labelled forged fail.
func rejectForged(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
	if b.Labels["forged"] == "true" {
		return time.Time{}, false, nil
	}
	return TrustReadyPhase(b)
}

func TestCollectorDerivesFreshnessFromBackupsAndPlans(t *testing.T) {
	g := NewWithT(t)
	older := backup("tenant-a", "old", "etcd", 30*time.Hour, 100)
	newer := backup("tenant-a", "new", "etcd", 2*time.Hour, 250)
	pending := backup("tenant-a", "pending", "etcd", time.Minute, 0)
	pending.Status.Phase = backupsv1alpha1.BackupPhasePending
	forged := backup("tenant-a", "forged", "etcd", 0, 1)
	forged.Labels = map[string]string{"forged": "true"}
	onlyForged := backup("tenant-b", "forged", "etcd", 0, 1)
	onlyForged.Labels = map[string]string{"forged": "true"}
	otherDriver := backup("tenant-a", "postgres", "db", time.Hour, 5)
	otherDriver.Spec.StrategyRef = backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr("strategy.backups.cozystack.io"), Kind: "Velero", Name: "v"}
	deleting := backup("tenant-c", "going", "etcd", time.Hour, 5)
	deleting.DeletionTimestamp = ptr(metav1.NewTime(now))

	suspended := planFor("tenant-b", "paused", "etcd", "@daily")
	suspended.Annotations = map[string]string{planpolicy.Suspend: "true"}
	notEtcd := planFor("tenant-a", "pg", "db", "@hourly")
	notEtcd.Spec.ApplicationRef.Kind = "Postgres"

	c := New(Options{
		Backups: storeOf(older, newer, pending, forged, onlyForged, otherDriver, deleting),
		Plans: storeOf(planFor("tenant-a", "nightly", "etcd", "0 2 * * *"), planFor("tenant-a", "weekdays", "etcd", "0 2 * * 1-5"),
			suspended, notEtcd, planFor("tenant-c", "broken", "etcd", "not a cron")),
		Verify: rejectForged,
		Clock:  clocktesting.NewFakePassiveClock(now),
	})
	created := float64(now.Add(-72 * time.Hour).Unix())
	want := fmt.Sprintf(`
# HELP etcd_backup_driver_backup_age_seconds Seconds since the newest verified Ready Backup of each application was taken.
# TYPE etcd_backup_driver_backup_age_seconds gauge
etcd_backup_driver_backup_age_seconds{application="etcd",namespace="tenant-a"} 7200
# HELP etcd_backup_driver_last_snapshot_size_bytes Stored size of the newest verified Ready Backup of each application.
# TYPE etcd_backup_driver_last_snapshot_size_bytes gauge
etcd_backup_driver_last_snapshot_size_bytes{application="etcd",namespace="tenant-a"} 250
# HELP etcd_backup_driver_last_success_timestamp_seconds Unix time the newest verified Ready Backup of each application was taken.
# TYPE etcd_backup_driver_last_success_timestamp_seconds gauge
etcd_backup_driver_last_success_timestamp_seconds{application="etcd",namespace="tenant-a"} %d
# HELP etcd_backup_driver_plan_created_timestamp_seconds Unix time each unsuspended Plan with a valid schedule was created.
# TYPE etcd_backup_driver_plan_created_timestamp_seconds gauge
etcd_backup_driver_plan_created_timestamp_seconds{application="etcd",namespace="tenant-a",plan="nightly"} %[2]g
etcd_backup_driver_plan_created_timestamp_seconds{application="etcd",namespace="tenant-a",plan="weekdays"} %[2]g
# HELP etcd_backup_driver_plan_interval_seconds Longest gap between consecutive runs of each unsuspended Plan with a valid schedule.
# TYPE etcd_backup_driver_plan_interval_seconds gauge
etcd_backup_driver_plan_interval_seconds{application="etcd",namespace="tenant-a",plan="nightly"} 86400
etcd_backup_driver_plan_interval_seconds{application="etcd",namespace="tenant-a",plan="weekdays"} 259200
# HELP etcd_backup_driver_unverified_backups Ready Etcd Backups the driver's verifier rejects (not counted anywhere else; possibly forged).
# TYPE etcd_backup_driver_unverified_backups gauge
etcd_backup_driver_unverified_backups{application="etcd",namespace="tenant-a"} 1
etcd_backup_driver_unverified_backups{application="etcd",namespace="tenant-b"} 1
# HELP etcd_backup_driver_verified_backups Verified Ready Backups each application has.
# TYPE etcd_backup_driver_verified_backups gauge
etcd_backup_driver_verified_backups{application="etcd",namespace="tenant-a"} 2
etcd_backup_driver_verified_backups{application="etcd",namespace="tenant-b"} 0
`, now.Add(-2*time.Hour).Unix(), created)
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(want))).To(Succeed())
	// A second scrape of the same objects gives the same answer (the
	// reused maps are reset, not accumulated).
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(want))).To(Succeed())
}

func TestCollectorServesNothingUntilTheCachesSync(t *testing.T) {
	g := NewWithT(t)
	synced := false
	c := New(Options{
		Backups: storeOf(backup("tenant-a", "b", "etcd", time.Hour, 1)),
		Plans:   storeOf(planFor("tenant-a", "p", "etcd", "@daily")),
		Synced:  func() bool { return synced },
		Clock:   clocktesting.NewFakePassiveClock(now),
	})
	g.Expect(testutil.CollectAndCount(c)).To(Equal(0))
	synced = true
	g.Expect(testutil.CollectAndCount(c)).To(Equal(7))
}

// The Verifier runs once per Backup version, and forgotten Backups'
// verdicts are dropped.
func TestCollectorAsksTheVerifierOncePerBackupVersion(t *testing.T) {
	g := NewWithT(t)
	calls := map[string]int{}
	counting := func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		calls[b.Name]++
		return TrustReadyPhase(b)
	}
	a, b := backup("tenant-a", "a", "etcd", time.Hour, 1), backup("tenant-a", "b", "etcd", 2*time.Hour, 1)
	backups := storeOf(a, b)
	c := New(Options{Backups: backups, Plans: storeOf(), Verify: counting, Clock: clocktesting.NewFakePassiveClock(now)})
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(c)).To(Succeed())

	for range 3 {
		_, err := reg.Gather()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(calls).To(Equal(map[string]int{"a": 1, "b": 1}))

	a2 := a.DeepCopy()
	a2.ResourceVersion = "2"
	a2.Spec.TakenAt = metav1.NewTime(now.Add(-time.Minute))
	g.Expect(backups.Update(a2)).To(Succeed())
	g.Expect(backups.Delete(b)).To(Succeed())
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(fmt.Sprintf(`
# HELP etcd_backup_driver_verified_backups Verified Ready Backups each application has.
# TYPE etcd_backup_driver_verified_backups gauge
etcd_backup_driver_verified_backups{application="etcd",namespace="tenant-a"} 1
# HELP etcd_backup_driver_last_success_timestamp_seconds Unix time the newest verified Ready Backup of each application was taken.
# TYPE etcd_backup_driver_last_success_timestamp_seconds gauge
etcd_backup_driver_last_success_timestamp_seconds{application="etcd",namespace="tenant-a"} %d
`, now.Add(-time.Minute).Unix())), MetricVerified, MetricLastSuccess)).To(Succeed())
	g.Expect(calls).To(Equal(map[string]int{"a": 2, "b": 1}), "the changed Backup is asked again")
	g.Expect(c.verdicts).To(HaveLen(1), "the deleted Backup's verdict is dropped")
}

// BenchmarkCollect10kBackups measures one scrape of 10,000 Backups with
// one Plan per application, in steady state (every Backup verified once
// already): spread over 1,000 applications (7,000 series out) and over 10
// (70 series out), which shows what a scrape costs beyond its output.
func BenchmarkCollect10kBackups(b *testing.B) {
	for _, apps := range []int{1000, 10} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			var backups, plans []any
			for i := range 10_000 {
				ns := fmt.Sprintf("tenant-%04d", i%apps)
				backups = append(backups, backup(ns, fmt.Sprintf("b-%d", i), "etcd", time.Duration(i+1)*time.Minute, 1<<20))
			}
			for i := range apps {
				plans = append(plans, planFor(fmt.Sprintf("tenant-%04d", i), "nightly", "etcd", "0 2 * * *"))
			}
			c := New(Options{Backups: storeOf(backups...), Plans: storeOf(plans...), Clock: clocktesting.NewFakePassiveClock(now)})
			sink := make(chan prometheus.Metric, 16384)
			scrape := func() int {
				c.Collect(sink)
				n := len(sink)
				for range n {
					<-sink
				}
				return n
			}
			if n, want := scrape(), 7*apps; n != want {
				b.Fatalf("series: got %d, want %d", n, want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				scrape()
			}
		})
	}
}
