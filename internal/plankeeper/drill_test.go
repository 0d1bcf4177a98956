package plankeeper

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// withDrill are the annotations of a drill schedule and window.
func withDrill(cron string, window time.Duration) map[string]string {
	return map[string]string{planpolicy.DrillSchedule: cron, planpolicy.DrillWindow: window.String()}
}

// judgedBackup records a sealed Ready Backup of plan and writes the
// conditions the driver would (Backups have no status subresource).
func judgedBackup(g Gomega, ns, name, plan string, takenAt time.Time, conds ...metav1.Condition) {
	b := planBackup(g, ns, name, plan, takenAt, backupsv1alpha1.BackupPhaseReady, false)
	for _, c := range conds {
		c.LastTransitionTime = metav1.Now()
		meta.SetStatusCondition(&b.Status.Conditions, c)
	}
	g.Expect(env.Client.Update(context.Background(), b)).To(Succeed())
}

func cond(typ string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: "Test", Message: "set by the test"}
}

// drillName is the name the driver gives p's drill due at due.
func drillName(g Gomega, p *backupsv1alpha1.Plan, due time.Time) string {
	_, key, err := testKeys.Active(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	return DrillName(key, p.Namespace, p.Name, getPlan(g, p).UID, due)
}

func ownDrillJobs(g Gomega, p *backupsv1alpha1.Plan) []backupsv1alpha1.RestoreJob {
	var list backupsv1alpha1.RestoreJobList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(p.Namespace))).To(Succeed())
	var out []backupsv1alpha1.RestoreJob
	for _, rj := range list.Items {
		if metav1.IsControlledBy(&rj, getPlan(g, p)) {
			out = append(out, rj)
		}
	}
	return out
}

// endDrill writes what the dry-run RestoreJob controller would at its end.
func endDrill(g Gomega, rj *backupsv1alpha1.RestoreJob, phase backupsv1alpha1.RestoreJobPhase, at time.Time, msg string) {
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
	rj.Status.Phase, rj.Status.Message = phase, msg
	rj.Status.CompletedAt = &metav1.Time{Time: at}
	if phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
		rj.Status.Rehearsal = &driverv1alpha1.RehearsalReport{RevisionAfter: 42, KeysAfter: 7}
	}
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
}

// series reads a drill gauge of one Plan from the driver's registry; ok is
// false when the series does not exist.
func series(g Gomega, name, ns, plan string) (float64, bool) {
	mfs, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "namespace") == ns && label(m, "plan") == plan {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A due drill creates exactly one dry-run RestoreJob, for the newest good
// Backup: newer ones that failed inspection, dropped content, are not
// Verified or are forged are passed over. Its end is recorded on the Plan.
func TestDrillRehearsesTheNewestGoodBackup(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "nightly", "0 3 * * *", withDrill("*/10 * * * *", 24*time.Hour))
	created := p.CreationTimestamp.Time
	verified := cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue)
	judgedBackup(g, ns, "good", "nightly", created.Add(-4*time.Hour), verified, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionTrue))
	judgedBackup(g, ns, "older", "nightly", created.Add(-5*time.Hour), verified)
	failedInspection := cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse)
	failedInspection.Reason = backupsv1alpha1.BackupReasonInspectionRefused
	judgedBackup(g, ns, "uninspectable", "nightly", created.Add(-3*time.Hour), verified, failedInspection)
	judgedBackup(g, ns, "dropped", "nightly", created.Add(-2*time.Hour), verified, cond(backupsv1alpha1.BackupConditionContentDrop, metav1.ConditionTrue))
	judgedBackup(g, ns, "unjudged", "nightly", created.Add(-90*time.Minute))
	judgedBackup(g, ns, "refused", "nightly", created.Add(-80*time.Minute), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionFalse))
	forged := planBackup(g, ns, "forged", "nightly", created.Add(-time.Hour), backupsv1alpha1.BackupPhaseReady, true)
	forged.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionVerified, Status: metav1.ConditionTrue, Reason: "Forged", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Update(context.Background(), forged)).To(Succeed())

	due := nthRun(mustParse(t, "*/10 * * * *"), created, 1)
	h := newHarness(due.Add(10 * time.Second))
	res, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", 10*time.Minute), "the next drill is in ten minutes")

	drills := ownDrillJobs(g, p)
	g.Expect(drills).To(HaveLen(1))
	d := drills[0]
	g.Expect(d.Name).To(Equal(drillName(g, p, due)))
	g.Expect(d.Spec.BackupRef.Name).To(Equal("good"))
	g.Expect(string(d.Spec.Options.Raw)).To(MatchJSON(`{"dryRun": true}`))
	g.Expect(d.Labels).To(HaveKeyWithValue(backupsv1alpha1.PlanNameLabel, "nightly"))
	g.Expect(d.Labels).To(HaveKeyWithValue(backupsv1alpha1.DrillLabel, "true"))
	g.Expect(record(g, p).LastDrillTime.Time).To(BeTemporally("==", due))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonRehearsalStarted)).To(ConsistOf(ContainSubstring("rehearsing Backup good")))

	// A second reconcile, and one that lost the record (a crash before it
	// was written, or a tenant removing it), make no second drill.
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	annotate(g, p, map[string]string{planrecord.Annotation: ""})
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownDrillJobs(g, p)).To(HaveLen(1))
	g.Expect(record(g, p).LastDrillTime.Time).To(BeTemporally("==", due))

	// A RestoreJob a tenant labels as a drill of this Plan, "succeeded"
	// and newer, is not the Plan's: it is not recorded.
	impostor := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: drillName(g, p, due.Add(time.Minute)),
			Labels: map[string]string{backupsv1alpha1.PlanNameLabel: "nightly", backupsv1alpha1.DrillLabel: "true"}},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "good"}},
	}
	g.Expect(env.Client.Create(context.Background(), impostor)).To(Succeed())
	endDrill(g, impostor, backupsv1alpha1.RestoreJobPhaseSucceeded, due.Add(5*time.Minute).Truncate(time.Second), "forged")

	ended := due.Add(3 * time.Minute).Truncate(time.Second)
	endDrill(g, &d, backupsv1alpha1.RestoreJobPhaseSucceeded, ended, "rehearsed Backup good")
	h.clk.SetTime(ended.Add(time.Minute))
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	st := record(g, p)
	g.Expect(st.LastRehearsal).NotTo(BeNil())
	g.Expect(st.LastRehearsal.RestoreJob).To(Equal(d.Name))
	g.Expect(st.LastRehearsal.Backup).To(Equal("good"))
	g.Expect(st.LastRehearsal.Succeeded).To(BeTrue())
	g.Expect(st.LastRehearsal.Message).To(Equal("rehearsed Backup good"))
	g.Expect(st.LastRehearsal.ScheduledAt.Time).To(BeTemporally("==", due))
	g.Expect(st.LastRehearsal.CompletedAt.Time).To(BeTemporally("==", ended))
	// A rehearsal counts from when its drill was due: the time its keyed
	// name binds, not the end its status reports.
	g.Expect(st.LastSuccessfulRehearsalTime.Time).To(BeTemporally("==", due))
	c := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.PlanReasonRehearsalRecent))
	v, ok := series(g, "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds", ns, "nightly")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(float64(due.Unix())))
	g.Expect(testutil.ToFloat64(rehearsalOverdue.WithLabelValues(ns, "nightly"))).To(Equal(0.0))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonRehearsalSucceeded)).To(HaveLen(1))
}

// A failed drill is recorded as failed and leaves the last success alone;
// with no success the window runs from the Plan's creation, and the
// condition and the gauge flip when it passes. Removing the drill removes
// the condition and the series.
func TestFailedDrillAndOverdue(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "p", "0 3 * * *", withDrill("*/10 * * * *", 30*time.Minute))
	created := p.CreationTimestamp.Time
	judgedBackup(g, ns, "b", "p", created.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	due := nthRun(mustParse(t, "*/10 * * * *"), created, 1)
	h := newHarness(due.Add(5 * time.Second))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	drills := ownDrillJobs(g, p)
	g.Expect(drills).To(HaveLen(1))

	ended := due.Add(time.Minute).Truncate(time.Second)
	endDrill(g, &drills[0], backupsv1alpha1.RestoreJobPhaseFailed, ended, "the staged snapshot does not boot")
	h.clk.SetTime(ended.Add(time.Second))
	res, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	st := record(g, p)
	g.Expect(st.LastRehearsal.Succeeded).To(BeFalse())
	g.Expect(st.LastRehearsal.Message).To(Equal("the staged snapshot does not boot"))
	g.Expect(st.LastSuccessfulRehearsalTime).To(BeNil())
	g.Expect(meta.IsStatusConditionFalse(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)).To(BeTrue())
	// It asks to be called again no later than the next drill or the flip.
	flip := created.Add(30 * time.Minute)
	g.Expect(h.clk.Now().Add(res.RequeueAfter)).To(BeTemporally("<=", flip.Add(time.Second)))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonRehearsalFailed)).To(ConsistOf(ContainSubstring("does not boot")))
	_, ok := series(g, "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds", ns, "p")
	g.Expect(ok).To(BeFalse())

	// Just before the window passes the next reconcile is due at the flip;
	// after it, overdue. (The drills due meanwhile find the failed one
	// finished and start again; the test fails them too.)
	h.clk.SetTime(flip.Add(-30 * time.Second))
	res, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", 31*time.Second))
	g.Expect(testutil.ToFloat64(rehearsalOverdue.WithLabelValues(ns, "p"))).To(Equal(0.0))
	h.clk.SetTime(flip.Add(2 * time.Second))
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	c := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.PlanReasonRehearsalOverdue))
	g.Expect(c.Message).To(ContainSubstring("no successful rehearsal since the Plan was created"))
	v, ok := series(g, "etcd_backup_driver_plan_rehearsal_overdue", ns, "p")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(1.0))

	annotate(g, p, map[string]string{planpolicy.DrillSchedule: "", planpolicy.DrillWindow: ""})
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)).To(BeNil())
	_, ok = series(g, "etcd_backup_driver_plan_rehearsal_overdue", ns, "p")
	g.Expect(ok).To(BeFalse())
}

// Without a good Backup a due drill is skipped with one Warning and
// remembered, not retried on every reconcile.
func TestDrillWithoutGoodBackupIsSkipped(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "p", "0 3 * * *", withDrill("*/10 * * * *", time.Hour))
	created := p.CreationTimestamp.Time
	judgedBackup(g, ns, "dropped", "p", created.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue),
		cond(backupsv1alpha1.BackupConditionContentDrop, metav1.ConditionTrue))
	due := nthRun(mustParse(t, "*/10 * * * *"), created, 1)
	h := newHarness(due.Add(5 * time.Second))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownDrillJobs(g, p)).To(BeEmpty())
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonNoBackupToRehearse)).To(HaveLen(1))
	st := record(g, p)
	g.Expect(st.LastDrillSkippedTime.Time).To(BeTemporally("==", due))
	g.Expect(st.LastDrillTime).To(BeNil())
}

// At most three finished drills are kept, and only once their outcome is
// in the stored status.
func TestDrillHistoryKeepsThree(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "p", "0 3 * * *", withDrill("*/10 * * * *", time.Hour))
	judgedBackup(g, ns, "b", "p", p.CreationTimestamp.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	sched := mustParse(t, "*/10 * * * *")
	h := newHarness(p.CreationTimestamp.Time)
	var names []string
	for n := 1; n <= 5; n++ {
		due := nthRun(sched, p.CreationTimestamp.Time, n)
		h.clk.SetTime(due.Add(5 * time.Second))
		_, err := h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		var rj backupsv1alpha1.RestoreJob
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: drillName(g, p, due)}, &rj)).To(Succeed())
		endDrill(g, &rj, backupsv1alpha1.RestoreJobPhaseSucceeded, due.Add(time.Minute).Truncate(time.Second), "ok")
		names = append(names, rj.Name)
		h.clk.SetTime(due.Add(2 * time.Minute))
		_, err = h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
	}
	var left []string
	for _, rj := range ownDrillJobs(g, p) {
		if rj.DeletionTimestamp == nil {
			left = append(left, rj.Name)
		}
	}
	g.Expect(left).To(ConsistOf(names[2], names[3], names[4]))
	g.Expect(record(g, p).LastRehearsal.RestoreJob).To(Equal(names[4]))
}

// A drill schedule takes H terms, hashed apart from the backup schedule's
// so a Plan's drill does not start on its backups' minute, and a drill
// name fits in 63 characters and differs from the BackupJob's.
func TestDrillScheduleAndName(t *testing.T) {
	g := NewWithT(t)
	from := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	var same int
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		backups, err := cronschedule.Parse("CRON_TZ=Europe/Berlin H 3 * * *", cronschedule.HashKey("ns", name))
		g.Expect(err).NotTo(HaveOccurred())
		drills, err := cronschedule.Parse("CRON_TZ=Europe/Berlin H 3 * * *", planpolicy.DrillHashKey("ns", name))
		g.Expect(err).NotTo(HaveOccurred())
		next := drills.Next(from)
		g.Expect(next.In(time.FixedZone("CEST", 2*3600)).Hour()).To(Equal(3))
		if backups.Next(from).Equal(next) {
			same++
		}
	}
	g.Expect(same).To(BeNumerically("<", 3), "drills are spread apart from their backups")

	long := "a-plan-with-a-name-long-enough-to-need-shortening-in-job-names"
	at := time.Date(2026, 5, 4, 3, 31, 0, 0, time.UTC)
	key := []byte(strings.Repeat("k", 32))
	g.Expect(len(DrillName(key, "ns", long, "uid", at))).To(BeNumerically("<=", 63))
	g.Expect(DrillName(key, "ns", long, "uid", at)).NotTo(Equal(cronschedule.RunName(long, at)))
	name := DrillName(key, "ns", "nightly", "uid", at)
	g.Expect(name).To(MatchRegexp("^nightly-drill-[a-z2-7]{8}-" + fmt.Sprint(at.Unix()/60) + "$"))
	// Keyed: another key, Plan (UID) or time gives another name.
	g.Expect(DrillName([]byte(strings.Repeat("o", 32)), "ns", "nightly", "uid", at)).NotTo(Equal(name))
	g.Expect(DrillName(key, "ns", "nightly", "uid2", at)).NotTo(Equal(name))
	g.Expect(DrillName(key, "ns", "nightly", "uid", at.Add(time.Minute))).NotTo(HavePrefix(strings.TrimSuffix(name, fmt.Sprint(at.Unix()/60))))
}

// A suspended Plan skips its drills and is never overdue; resumed, it is
// judged again from its last success (here: its creation).
func TestSuspendedPlanNeitherDrillsNorIsOverdue(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	ann := withDrill("*/10 * * * *", 30*time.Minute)
	ann[planpolicy.Suspend] = "true"
	p := createPlan(g, ns, "p", "0 3 * * *", ann)
	judgedBackup(g, ns, "b", "p", p.CreationTimestamp.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	h := newHarness(p.CreationTimestamp.Add(time.Hour + 5*time.Second))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownDrillJobs(g, p)).To(BeEmpty())
	g.Expect(record(g, p).LastDrillSkippedTime).NotTo(BeNil())
	g.Expect(meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)).To(BeNil())
	_, ok := series(g, "etcd_backup_driver_plan_rehearsal_overdue", ns, "p")
	g.Expect(ok).To(BeFalse())

	annotate(g, p, map[string]string{planpolicy.Suspend: ""})
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownDrillJobs(g, p)).To(BeEmpty(), "the drills that fell while suspended do not start on resume")
	g.Expect(meta.IsStatusConditionTrue(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)).To(BeTrue())
	v, _ := series(g, "etcd_backup_driver_plan_rehearsal_overdue", ns, "p")
	g.Expect(v).To(Equal(1.0))
}

// A tenant can copy everything the driver puts on a drill: its name (with
// a later minute), its labels and annotations, and its controller
// reference to the Plan. Such a look-alike, "succeeded" and newer than the
// Plan's own drill, is not the Plan's drill: it is not recorded, not
// counted as a rehearsal, and does not stop the real drill from running.
func TestALookAlikeDrillIsNotTheDrivers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "nightly", "0 3 * * *", withDrill("*/10 * * * *", 24*time.Hour))
	created := p.CreationTimestamp.Time
	judgedBackup(g, ns, "good", "nightly", created.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	sched := mustParse(t, "*/10 * * * *")
	due := nthRun(sched, created, 1)
	h := newHarness(due.Add(5 * time.Second))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	drills := ownDrillJobs(g, p)
	g.Expect(drills).To(HaveLen(1))
	genuine := drills[0]

	next := sched.Next(due)
	lookAlike := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ns,
			Name:            strings.Replace(genuine.Name, fmt.Sprint(due.Unix()/60), fmt.Sprint(next.Unix()/60), 1),
			Labels:          genuine.Labels,
			Annotations:     map[string]string{backupsv1alpha1.ScheduledAtAnnotation: next.UTC().Format(time.RFC3339)},
			OwnerReferences: genuine.OwnerReferences,
		},
		Spec: genuine.Spec,
	}
	g.Expect(lookAlike.Name).NotTo(Equal(genuine.Name))
	g.Expect(env.Client.Create(ctx, lookAlike)).To(Succeed())
	endDrill(g, lookAlike, backupsv1alpha1.RestoreJobPhaseSucceeded, next.Add(time.Minute).Truncate(time.Second), "forged")

	h.clk.SetTime(next.Add(5 * time.Second))
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	st := record(g, p)
	g.Expect(st.LastRehearsal).To(BeNil(), "a look-alike's outcome was recorded as the Plan's rehearsal")
	g.Expect(st.LastSuccessfulRehearsalTime).To(BeNil())
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonRehearsalSucceeded)).To(BeEmpty())
}
