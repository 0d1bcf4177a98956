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
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
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
	g.Expect(jobs[0].Name).To(Equal(JobName(p.Name, due)))
	g.Expect(testutil.ToFloat64(skippedRunsTotal.WithLabelValues(backupsv1alpha1.PlanReasonMissedStartingDeadline)) - missedBefore).To(Equal(17.0))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonMissedStartingDeadline)).To(ConsistOf(ContainSubstring("skipped 17 runs")))

	st := getPlan(g, p).Status
	g.Expect(st.LastScheduleTime.Time).To(BeTemporally("==", due))
	g.Expect(st.LastSkippedTime.Time).To(BeTemporally("==", due.Add(-10*time.Minute)))
	g.Expect(st.NextScheduleTime.Time).To(BeTemporally("==", due.Add(10*time.Minute)))

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
	allow := createPlan(g, ns, "allow", "0 * * * *", "Europe/Berlin", func(p *backupsv1alpha1.Plan) {
		p.Spec.ConcurrencyPolicy = backupsv1alpha1.ConcurrencyAllow
	})
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
	st := getPlan(g, forbid).Status
	cond := meta.FindStatusCondition(st.Conditions, backupsv1alpha1.PlanConditionScheduled)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonConcurrencyForbidden))
	g.Expect(st.LastSkippedTime.Time).To(BeTemporally("==", first))
	g.Expect(st.LastScheduleTime).To(BeNil())

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
	g.Expect(j.Name).To(Equal(JobName("forbid", second)))
	g.Expect(j.Labels).To(HaveKeyWithValue(backupsv1alpha1.ApplicationNameLabel, "etcd"))
	g.Expect(j.Spec.PlanRef.Name).To(Equal("forbid"))
	g.Expect(j.Spec.ApplicationRef.APIGroupOrEmpty()).To(Equal("apps.cozystack.io"))
	g.Expect(j.Spec.BackupClassName).To(Equal("etcd"))
	g.Expect(metav1.IsControlledBy(&j, getPlan(g, forbid))).To(BeTrue())
	cond = meta.FindStatusCondition(getPlan(g, forbid).Status.Conditions, backupsv1alpha1.PlanConditionScheduled)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonJobCreated))
}

// A status write lost after the BackupJob was created does not make the
// run happen twice: the job's own record of its run time counts.
func TestLostStatusWriteDoesNotRepeatARun(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "crashy", "*/5 * * * *", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.ConcurrencyPolicy = backupsv1alpha1.ConcurrencyAllow
	})
	sched := mustParse(t, "*/5 * * * *", "")
	due := nthRun(sched, p.CreationTimestamp.Time, 1)
	h := newHarness(due.Add(10 * time.Second))
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())

	// Forget the status, as if the write never landed.
	cur := getPlan(g, p)
	cur.Status = backupsv1alpha1.PlanStatus{}
	g.Expect(env.Client.Status().Update(context.Background(), cur)).To(Succeed())

	h.clk.Step(time.Minute)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(HaveLen(1))
	g.Expect(getPlan(g, p).Status.LastScheduleTime.Time).To(BeTemporally("==", due))
}

// A bad cron expression or time zone is reported with valid, typed reasons
// (the API server accepts the status) and stops scheduling until fixed.
func TestInvalidScheduleIsReported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	h := newHarness(time.Now().Add(time.Hour))

	for _, tc := range []struct{ name, cron, tz, reason string }{
		{"badcron", "every day at noon", "", backupsv1alpha1.PlanReasonInvalidCron},
		{"badtz", "0 3 * * *", "Europe/Atlantis", backupsv1alpha1.PlanReasonInvalidTimeZone},
		{"badhash", "H(0-60) 3 * * *", "", backupsv1alpha1.PlanReasonInvalidCron},
	} {
		p := createPlan(g, ns, tc.name, tc.cron, tc.tz, nil)
		_, err := h.reconcile(p)
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error %v must be terminal", err)
		st := getPlan(g, p).Status
		cond := meta.FindStatusCondition(st.Conditions, backupsv1alpha1.PlanConditionError)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(tc.reason))
		g.Expect(st.NextScheduleTime).To(BeNil())
		g.Expect(ownJobs(g, p)).To(BeEmpty())
		g.Expect(containing(h.events(), tc.reason)).NotTo(BeEmpty())

		cur := getPlan(g, p)
		cur.Spec.Schedule = backupsv1alpha1.PlanSchedule{Cron: "0 3 * * *", TimeZone: "Europe/Berlin"}
		g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		_, err = h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		cond = meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonScheduleValid))
		g.Expect(getPlan(g, p).Status.NextScheduleTime).NotTo(BeNil())
	}
}

// A suspended Plan starts nothing; runs that pass while it is suspended are
// not started on resume.
func TestSuspend(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "paused", "*/5 * * * *", "", func(p *backupsv1alpha1.Plan) { p.Spec.Suspend = true })
	sched := mustParse(t, "*/5 * * * *", "")
	due := nthRun(sched, p.CreationTimestamp.Time, 1)
	h := newHarness(due.Add(10 * time.Second))

	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(BeEmpty())
	st := getPlan(g, p).Status
	g.Expect(st.NextScheduleTime).To(BeNil())
	g.Expect(meta.FindStatusCondition(st.Conditions, backupsv1alpha1.PlanConditionScheduled).Reason).To(Equal(backupsv1alpha1.PlanReasonSuspended))

	cur := getPlan(g, p)
	cur.Spec.Suspend = false
	g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
	h.clk.Step(20 * time.Second)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(BeEmpty())
	g.Expect(getPlan(g, p).Status.NextScheduleTime.Time).To(BeTemporally("==", sched.Next(due)))
}

// Finished BackupJobs beyond the history limits are deleted, oldest first;
// running ones never are.
func TestHistoryPruning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "hist", "@yearly", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](2)
	})
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

// testKeys sign the Backups these tests create, as the backup path would.
var testKeys = provenance.StaticKeys{ActiveID: "t", Keys: map[string][]byte{"t": []byte(strings.Repeat("t", 32))}}

// planBackup is a Backup of plan, as the backup path records it; sealed
// unless forged.
func planBackup(g Gomega, ns, name, plan string, takenAt time.Time, phase backupsv1alpha1.BackupPhase, forged bool) *backupsv1alpha1.Backup {
	rec := artifact.Record{SnapshotName: name + "-snap", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: "bkt", Endpoint: "https://s3.example.com", Key: ns + "/etcd/",
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{backupsv1alpha1.PlanNameLabel: plan}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: plan},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.NewTime(takenAt),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: phase},
	}
	if !forged {
		g.Expect(provenance.Seal(context.Background(), testKeys, b)).To(Succeed())
	}
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	return b
}

func createBackup(g Gomega, ns, name, plan string, takenAt time.Time, phase backupsv1alpha1.BackupPhase) {
	planBackup(g, ns, name, plan, takenAt, phase, false)
}

func backupNames(g Gomega, ns string) []string {
	var list backupsv1alpha1.BackupList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, b := range list.Items {
		out = append(out, b.Name)
	}
	return out
}

// Retention keeps the newest Backups, never the one a RestoreJob is using
// and never the newest Ready one, and releases a Backup once its restore
// finishes.
func TestRetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep", "@yearly", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.Retention = &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](2)}
	})
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	ready, failed := backupsv1alpha1.BackupPhaseReady, backupsv1alpha1.BackupPhaseFailed
	createBackup(g, ns, "b1", "keep", now.Add(-5*time.Hour), ready)
	createBackup(g, ns, "b2", "keep", now.Add(-4*time.Hour), ready)
	createBackup(g, ns, "b3", "keep", now.Add(-3*time.Hour), ready)
	createBackup(g, ns, "b4", "keep", now.Add(-2*time.Hour), failed)
	createBackup(g, ns, "b5", "keep", now.Add(-1*time.Hour), failed)
	createBackup(g, ns, "other", "another-plan", now.Add(-9*time.Hour), ready)

	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "b1"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	// b4, b5: newest two; b3: newest Ready; b1: in use; other: not this Plan's.
	g.Expect(backupNames(g, ns)).To(ConsistOf("b1", "b3", "b4", "b5", "other"))
	g.Expect(getPlan(g, p).Status.LastSuccessfulBackup).To(Equal("b3"))

	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("b3", "b4", "b5", "other"))
	g.Expect(containing(h.events(), reasonBackupPruned)).To(HaveLen(2))
}

// A restore that failed after it deleted the cluster, without putting it
// back, still reads its Backup: it is the data to restore again, so
// retention keeps it until a person ends the restore by deleting the
// RestoreJob.
func TestRetentionKeepsTheBackupOfAFailedRestoreNeedingAHand(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep1h", "@yearly", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.Retention = &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1)}
	})
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	createBackup(g, ns, "old", "keep1h", now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
	createBackup(g, ns, "new", "keep1h", now.Add(-1*time.Hour), backupsv1alpha1.BackupPhaseReady)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "old"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	t0 := metav1.Now()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	rj.Status.Conditions = []metav1.Condition{
		{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(backupsv1alpha1.ReasonRollbackFailed), Message: "m", LastTransitionTime: t0},
		{Type: backupsv1alpha1.RestoreConditionPurged, Status: metav1.ConditionTrue, Reason: string(backupsv1alpha1.ReasonClusterPurged), Message: "m", LastTransitionTime: t0},
		{Type: backupsv1alpha1.RestoreConditionRollback, Status: metav1.ConditionTrue, Reason: string(backupsv1alpha1.ReasonBootstrapFailed), Message: "m", LastTransitionTime: t0},
	}
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("old", "new"), "the Backup a failed restore may be redone from was pruned")

	g.Expect(env.Client.Delete(ctx, rj)).To(Succeed())
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("new"))
}

// staleCache hides every RestoreJob, as a cache that has not yet seen a
// RestoreJob created a moment ago would.
type staleCache struct{ client.Client }

func (c staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*backupsv1alpha1.RestoreJobList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// Retention confirms with the API server that no restore reads a Backup
// before deleting it, whatever the cache says.
func TestRetentionDoesNotTrustTheCacheAboutRestores(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep1", "@yearly", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.Retention = &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1)}
	})
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	createBackup(g, ns, "old", "keep1", now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
	createBackup(g, ns, "new", "keep1", now.Add(-1*time.Hour), backupsv1alpha1.BackupPhaseReady)
	g.Expect(env.Client.Create(ctx, &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "just-created"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "old"}},
	})).To(Succeed())

	h := newHarness(now)
	h.r.Client = staleCache{env.Client}
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("old", "new"))
}

// A tenant's hand-written Backup with the Plan's labels and a time far in
// the future neither pushes real Backups out of keepLast nor is pruned: it
// is not the driver's, so retention does not see it.
func TestRetentionIgnoresForgedBackups(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep2", "@yearly", "", func(p *backupsv1alpha1.Plan) {
		p.Spec.Retention = &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](2)}
	})
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	ready := backupsv1alpha1.BackupPhaseReady
	createBackup(g, ns, "real-1", "keep2", now.Add(-2*time.Hour), ready)
	createBackup(g, ns, "real-2", "keep2", now.Add(-1*time.Hour), ready)
	planBackup(g, ns, "forged-1", "keep2", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), ready, true)
	planBackup(g, ns, "forged-2", "keep2", time.Date(2099, 1, 2, 0, 0, 0, 0, time.UTC), ready, true)
	// A real Backup edited to look newer is no longer verified either.
	edited := planBackup(g, ns, "edited", "keep2", now.Add(-3*time.Hour), ready, false)
	edited.Spec.TakenAt = metav1.NewTime(time.Date(2099, 1, 3, 0, 0, 0, 0, time.UTC))
	g.Expect(env.Client.Update(context.Background(), edited)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("real-1", "real-2", "forged-1", "forged-2", "edited"))
	g.Expect(getPlan(g, p).Status.LastSuccessfulBackup).To(Equal("real-2"))
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
