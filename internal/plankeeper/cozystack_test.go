package plankeeper

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// cozystackJob is the BackupJob Cozystack's Plan controller creates for
// the run of p at t (internal/backupcontroller/factory/backupjob.go at the
// pinned commit): named <plan>-<Unix minutes>, with spec.planRef and a
// controller reference to the Plan, and nothing of the driver's (no
// labels, no scheduled-at annotation).
func cozystackJob(g Gomega, p *backupsv1alpha1.Plan, t time.Time) *backupsv1alpha1.BackupJob {
	j := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("%s-%d", p.Name, t.Unix()/60)},
		Spec: backupsv1alpha1.BackupJobSpec{
			PlanRef:         &backupsv1alpha1.LocalObjectReference{Name: p.Name},
			ApplicationRef:  backupsv1alpha1.NormalizeApplicationRef(p.Spec.ApplicationRef),
			BackupClassName: p.Spec.BackupClassName,
		},
	}
	g.Expect(controllerutil.SetControllerReference(p, j, env.Client.Scheme())).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), j)).To(Succeed())
	return j
}

// On a Cozystack platform the driver's scheduler is off
// (--disable-controllers=plan) and Cozystack's Plan controller creates the
// BackupJobs. Retention and drills still apply to the Backups the driver
// records for those jobs: only this controller runs here, in a manager,
// driven by watches. Cozystack's controller writing the Plan's Error
// condition meanwhile is neither overwritten nor fought over.
func TestRetentionAndDrillsWhenCozystackSchedules(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(g)
	ann := keepLast("2")
	for k, v := range withDrill("*/5 * * * *", 24*time.Hour) {
		ann[k] = v
	}
	p := createPlan(g, ns, "nightly", "CRON_TZ=Europe/Berlin 0 3 * * *", ann)
	p = getPlan(g, p)
	created := p.CreationTimestamp.Time

	// Cozystack's controller has written its condition (with a reason the
	// CRD accepts: the pinned controller's own has spaces and is refused).
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.PlanConditionError, Status: metav1.ConditionFalse,
		Reason: "CronSpecIsValid", Message: "The cron schedule has been successfully parsed"})
	g.Expect(env.Client.Status().Update(ctx, p)).To(Succeed())

	// Three runs of Cozystack's, each recorded as a Backup by the backup
	// path (planRef from the job).
	for i := 3; i >= 1; i-- {
		at := created.Add(-time.Duration(i) * 24 * time.Hour)
		j := cozystackJob(g, p, at)
		judgedBackup(g, ns, j.Name, "nightly", at.Add(time.Minute), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	}
	oldest := fmt.Sprintf("nightly-%d", created.Add(-3*24*time.Hour).Unix()/60)
	newest := fmt.Sprintf("nightly-%d", created.Add(-24*time.Hour).Unix()/60)

	due := nthRun(mustParse(t, "CRON_TZ=Europe/Berlin */5 * * * *"), created, 1)
	clk := clocktesting.NewFakeClock(due.Add(20 * time.Second))
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 driverscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(ControllerName), Clock: clk, Keys: testKeys}
	g.Expect(r.SetupWithManager(mgr, 1)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
	}()

	g.Eventually(func() []string { return backupNames(g, ns) }).WithTimeout(20 * time.Second).ShouldNot(ContainElement(oldest))
	g.Expect(backupNames(g, ns)).To(HaveLen(2))
	var drill backupsv1alpha1.RestoreJob
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: drillName(g, p, due)}, &drill)).To(Succeed())
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(drill.Spec.BackupRef.Name).To(Equal(newest))
	g.Eventually(func(g Gomega) {
		rec := record(g, p)
		g.Expect(rec.LastSuccessfulBackup).To(Equal(newest))
		g.Expect(rec.LastDrillTime).NotTo(BeNil())
		g.Expect(rec.LastScheduleTime).To(BeNil(), "no scheduler of the driver's ran")
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// The record (metadata) and the conditions (status) are two writes:
	// the conditions may land a moment after the record.
	g.Eventually(func(g Gomega) {
		conds := getPlan(g, p).Status.Conditions
		c := meta.FindStatusCondition(conds, backupsv1alpha1.PlanConditionError)
		g.Expect(c).NotTo(BeNil(), "Cozystack's condition was dropped")
		g.Expect(c.Reason).To(Equal("CronSpecIsValid"))
		g.Expect(meta.IsStatusConditionTrue(conds, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
		g.Expect(meta.FindStatusCondition(conds, backupsv1alpha1.PlanConditionRehearsalOverdue)).NotTo(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// Cozystack writes its condition again (a full update, as its
	// controller does); the driver's conditions and record stay.
	cur := getPlan(g, p)
	meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.PlanConditionError, Status: metav1.ConditionTrue,
		Reason: "CronSpecIsInvalid", Message: "could not parse cron"})
	g.Expect(env.Client.Status().Update(ctx, cur)).To(Succeed())
	annotate(g, p, map[string]string{planpolicy.RetentionKeepLast: "1"})
	g.Eventually(func() []string { return backupNames(g, ns) }).WithTimeout(20 * time.Second).Should(ConsistOf(newest))
	conds := getPlan(g, p).Status.Conditions
	g.Expect(meta.FindStatusCondition(conds, backupsv1alpha1.PlanConditionError).Reason).To(Equal("CronSpecIsInvalid"))
	g.Expect(meta.IsStatusConditionTrue(conds, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
	g.Expect(getPlan(g, p).Annotations).To(HaveKey(planrecord.Annotation))
}
