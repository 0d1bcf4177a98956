package plan

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// After three hours without a controller, one reconcile starts only the
// newest run (inside the starting deadline) and reports the 17 others as
// skipped, once.
func TestControllerDownThreeHours(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "every10", "*/10 * * * *", "", nil)
	sched := mustParse(t, "*/10 * * * *", "")
	due := nthRun(sched, p.CreationTimestamp.Time, 18)
	h := newHarness(due.Add(2 * time.Minute))
	missedBefore := testutil.ToFloat64(skippedRunsTotal.WithLabelValues(backupsv1alpha1.PlanReasonMissedStartingDeadline))

	res, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(8 * time.Minute))

	jobs := ownJobs(g, p)
	g.Expect(jobs).To(HaveLen(1))
	g.Expect(jobs[0].Name).To(Equal(cronschedule.RunName(p.Name, due)))
	g.Expect(testutil.ToFloat64(skippedRunsTotal.WithLabelValues(backupsv1alpha1.PlanReasonMissedStartingDeadline)) - missedBefore).To(Equal(17.0))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonMissedStartingDeadline)).To(ConsistOf(ContainSubstring("skipped 17 runs")))

	rec := record(g, p)
	g.Expect(rec.LastScheduleTime.Time).To(BeTemporally("==", due))
	g.Expect(rec.LastSkippedTime.Time).To(BeTemporally("==", due.Add(-10*time.Minute)))
	g.Expect(rec.NextScheduleTime.Time).To(BeTemporally("==", due.Add(10*time.Minute)))

	// Reconciling again at the same instant changes nothing and reports nothing.
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(HaveLen(1))
	g.Expect(containing(h.events(), "skipped")).To(BeEmpty())
}

// Forbid skips a run while any BackupJob for the application runs (even one
// the Plan did not create); the next run after it finishes starts. Allow
// starts regardless.
func TestConcurrencyPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	forbid := createPlan(g, ns, "forbid", "0 * * * *", "Europe/Berlin", nil)
	allow := createPlan(g, ns, "allow", "0 * * * *", "Europe/Berlin", map[string]string{planpolicy.ConcurrencyPolicy: "Allow"})
	running := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adhoc"},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("apps.cozystack.io"), Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd",
		},
	}
	g.Expect(env.Client.Create(ctx, running)).To(Succeed())
	setJobPhase(g, running, backupsv1alpha1.BackupJobPhaseRunning)

	sched := mustParse(t, "0 * * * *", "Europe/Berlin")
	first := nthRun(sched, forbid.CreationTimestamp.Time, 1)
	h := newHarness(first.Add(30 * time.Second))

	_, err := h.reconcile(forbid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, forbid)).To(BeEmpty())
	cond := meta.FindStatusCondition(getPlan(g, forbid).Status.Conditions, backupsv1alpha1.PlanConditionScheduled)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonConcurrencyForbidden))
	rec := record(g, forbid)
	g.Expect(rec.LastSkippedTime.Time).To(BeTemporally("==", first))
	g.Expect(rec.LastScheduleTime).To(BeNil())

	_, err = h.reconcile(allow)
	g.Expect(err).NotTo(HaveOccurred())
	allowJobs := ownJobs(g, allow)
	g.Expect(allowJobs).To(HaveLen(1))
	// The Allow plan's job is for the same application; let it finish too.
	setJobPhase(g, &allowJobs[0], backupsv1alpha1.BackupJobPhaseSucceeded)

	// The skipped run is not retried; the next one starts once the job ends.
	setJobPhase(g, running, backupsv1alpha1.BackupJobPhaseSucceeded)
	_, err = h.reconcile(forbid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, forbid)).To(BeEmpty())

	second := sched.Next(first)
	h.clk.SetTime(second.Add(time.Second))
	_, err = h.reconcile(forbid)
	g.Expect(err).NotTo(HaveOccurred())
	jobs := ownJobs(g, forbid)
	g.Expect(jobs).To(HaveLen(1))
	j := jobs[0]
	g.Expect(j.Name).To(Equal(cronschedule.RunName("forbid", second)))
	g.Expect(j.Labels).To(HaveKeyWithValue(backupsv1alpha1.ApplicationNameLabel, "etcd"))
	g.Expect(j.Spec.PlanRef.Name).To(Equal("forbid"))
	g.Expect(j.Spec.ApplicationRef.APIGroupOrEmpty()).To(Equal("apps.cozystack.io"))
	g.Expect(j.Spec.BackupClassName).To(Equal("etcd"))
	g.Expect(metav1.IsControlledBy(&j, getPlan(g, forbid))).To(BeTrue())
	cond = meta.FindStatusCondition(getPlan(g, forbid).Status.Conditions, backupsv1alpha1.PlanConditionScheduled)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonJobCreated))
}

// A crash between the BackupJob's creation and the write of the Plan's
// record (or a record the tenant removed or forged) does not make the run
// happen twice: the job's own record of its run time counts.
func TestLostRecordDoesNotRepeatARun(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "crashy", "*/5 * * * *", "", map[string]string{planpolicy.ConcurrencyPolicy: "Allow"})
	sched := mustParse(t, "*/5 * * * *", "")
	due := nthRun(sched, p.CreationTimestamp.Time, 1)
	h := newHarness(due.Add(10 * time.Second))
	h.r.Client = failRecordWrites{Client: env.Client}
	_, err := h.reconcile(p)
	g.Expect(err).To(MatchError(ContainSubstring("crashed")))
	g.Expect(ownJobs(g, p)).To(HaveLen(1))
	g.Expect(getPlan(g, p).Annotations).NotTo(HaveKey(planrecord.Annotation), "the record was written")

	h.r.Client = env.Client
	h.clk.Step(time.Minute)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(HaveLen(1))
	g.Expect(record(g, p).LastScheduleTime.Time).To(BeTemporally("==", due))

	for _, forged := range []string{`{"lastScheduleTime":"2000-01-01T00:00:00Z"}`, "not json", ""} {
		annotate(g, p, map[string]string{planrecord.Annotation: forged})
		_, err = h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ownJobs(g, p)).To(HaveLen(1), "record %q", forged)
		g.Expect(record(g, p).LastScheduleTime.Time).To(BeTemporally("==", due))
	}
}

// failRecordWrites fails every patch of a Plan, as a driver that crashed
// right after creating the BackupJob.
type failRecordWrites struct{ client.Client }

func (c failRecordWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*backupsv1alpha1.Plan); ok {
		return errors.New("crashed before writing the Plan")
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A bad cron expression or time zone is reported with valid, typed reasons
// (the API server accepts the status) and stops scheduling until fixed.
func TestInvalidScheduleIsReported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	h := newHarness(time.Now().Add(time.Hour))

	for _, tc := range []struct{ name, cron, tz, reason string }{
		{"badprefix", "TZ= 0 3 * * *", "", backupsv1alpha1.PlanReasonInvalidTimeZone},
		{"badcron", "every day at noon", "", backupsv1alpha1.PlanReasonInvalidCron},
		{"badtz", "0 3 * * *", "Europe/Atlantis", backupsv1alpha1.PlanReasonInvalidTimeZone},
		{"badhash", "H(0-60) 3 * * *", "", backupsv1alpha1.PlanReasonInvalidCron},
	} {
		p := createPlan(g, ns, tc.name, tc.cron, tc.tz, nil)
		_, err := h.reconcile(p)
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error %v must be terminal", err)
		cond := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(tc.reason))
		g.Expect(record(g, p).NextScheduleTime).To(BeNil())
		g.Expect(ownJobs(g, p)).To(BeEmpty())
		g.Expect(containing(h.events(), tc.reason)).NotTo(BeEmpty())

		cur := getPlan(g, p)
		cur.Spec.Schedule = backupsv1alpha1.PlanSchedule{Cron: "CRON_TZ=Europe/Berlin 0 3 * * *"}
		g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		_, err = h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		cond = meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonScheduleValid))
		g.Expect(record(g, p).NextScheduleTime).NotTo(BeNil())
	}
}

// A suspended Plan starts nothing; runs that pass while it is suspended are
// not started on resume.
func TestSuspend(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "paused", "*/5 * * * *", "", map[string]string{planpolicy.Suspend: "true"})
	sched := mustParse(t, "*/5 * * * *", "")
	due := nthRun(sched, p.CreationTimestamp.Time, 1)
	h := newHarness(due.Add(10 * time.Second))

	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(BeEmpty())
	g.Expect(record(g, p).NextScheduleTime).To(BeNil())
	g.Expect(meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionScheduled).Reason).To(Equal(backupsv1alpha1.PlanReasonSuspended))

	annotate(g, p, map[string]string{planpolicy.Suspend: ""})
	h.clk.Step(20 * time.Second)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(BeEmpty())
	g.Expect(record(g, p).NextScheduleTime.Time).To(BeTemporally("==", sched.Next(due)))
}

// Finished BackupJobs beyond the history limits are deleted, oldest first;
// running ones never are.
func TestHistoryPruning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "hist", "@yearly", "", map[string]string{planpolicy.SuccessfulJobsHistoryLimit: "2"})
	p = getPlan(g, p)
	base := p.CreationTimestamp.Add(-48 * time.Hour)
	phases := map[string]backupsv1alpha1.BackupJobPhase{
		"s1": backupsv1alpha1.BackupJobPhaseSucceeded, "s2": backupsv1alpha1.BackupJobPhaseSucceeded,
		"s3": backupsv1alpha1.BackupJobPhaseSucceeded, "s4": backupsv1alpha1.BackupJobPhaseSucceeded,
		"f1": backupsv1alpha1.BackupJobPhaseFailed, "f2": backupsv1alpha1.BackupJobPhaseFailed,
		"r1": backupsv1alpha1.BackupJobPhaseRunning,
	}
	for name, phase := range phases {
		hour := int(name[1] - '0')
		j := newJob(p, base.Add(time.Duration(hour)*time.Hour))
		j.Name = "hist-" + name
		g.Expect(metav1.IsControlledBy(j, p)).To(BeFalse())
		j.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(p, backupsv1alpha1.GroupVersion.WithKind("Plan"))}
		g.Expect(env.Client.Create(ctx, j)).To(Succeed())
		setJobPhase(g, j, phase)
	}
	h := newHarness(p.CreationTimestamp.Add(time.Minute))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())

	var left []string
	for _, j := range ownJobs(g, p) {
		left = append(left, j.Name)
	}
	g.Expect(left).To(ConsistOf("hist-s3", "hist-s4", "hist-f2", "hist-r1"))
	g.Expect(containing(h.events(), reasonJobPruned)).To(HaveLen(3))
}

// A tenant's 40 KB cron expression is quoted in the error; uncut, the
// condition message exceeds the CRD's 32768 and every status write fails for
// ever. The condition and the Event are cut like every other message.
func TestHugeCronIsReportedCut(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	h := newHarness(time.Now().Add(time.Hour))
	p := createPlan(g, ns, "huge", "@"+strings.Repeat("x", 40<<10), "", nil)
	_, err := h.reconcile(p)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error %v must be terminal", err)
	cond := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
	g.Expect(cond).NotTo(BeNil(), "the status write failed")
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonInvalidCron))
	g.Expect(len(cond.Message)).To(BeNumerically("<=", textlimit.MaxMessage))
	for _, e := range containing(h.events(), backupsv1alpha1.PlanReasonInvalidCron) {
		g.Expect(len(e)).To(BeNumerically("<=", textlimit.MaxNote+200))
	}
}

// A Plan whose BackupClass binds its application to another kind of
// strategy (or names no class that exists) is not the driver's: nothing
// is created and nothing is written to it, whatever its schedule says.
func TestAPlanOfAnotherStrategyIsLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	class := &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "velero-"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Velero", Name: "v"},
		}}},
	}
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	for _, className := range []string{class.Name, "missing"} {
		p := createPlan(g, ns, "other-"+strings.TrimSuffix(className, "-"), "* * * * *", "", nil)
		cur := getPlan(g, p)
		cur.Spec.BackupClassName = className
		g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		before := getPlan(g, p)
		h := newHarness(p.CreationTimestamp.Add(90 * time.Second))
		res, err := h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(BeZero())
		g.Expect(ownJobs(g, p)).To(BeEmpty())
		after := getPlan(g, p)
		g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Plan was written to")
		g.Expect(h.events()).To(BeEmpty())
	}
}
