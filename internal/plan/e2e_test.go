package plan

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// A Plan run by a manager creates its BackupJob when the run is due, and
// follows its jobs and Backups by watching them: the test plays the backup
// path by finishing the job and recording a Backup.
func TestPlanProducesBackupJobEndToEnd(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(g)
	p := createPlan(g, ns, "nightly", "*/5 * * * *", "Europe/Berlin", nil)
	sched := mustParse(t, "*/5 * * * *", "Europe/Berlin")
	due := nthRun(sched, p.CreationTimestamp.Time, 1)
	clk := clocktesting.NewFakeClock(due.Add(20 * time.Second))

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 driverscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
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

	var job backupsv1alpha1.BackupJob
	key := client.ObjectKey{Namespace: ns, Name: cronschedule.RunName("nightly", due)}
	g.Eventually(func() error { return env.Client.Get(ctx, key, &job) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(job.Labels).To(Equal(map[string]string{
		backupsv1alpha1.PlanNameLabel:        "nightly",
		backupsv1alpha1.ApplicationNameLabel: "etcd",
	}))
	g.Expect(job.Spec.PlanRef).To(Equal(&backupsv1alpha1.LocalObjectReference{Name: "nightly"}))
	g.Expect(metav1.IsControlledBy(&job, getPlan(g, p))).To(BeTrue())

	g.Eventually(func(g Gomega) {
		rec := record(g, p)
		g.Expect(rec.LastScheduleTime).NotTo(BeNil())
		g.Expect(rec.LastScheduleTime.Time).To(BeTemporally("==", due))
		g.Expect(rec.NextScheduleTime.Time).To(BeTemporally("==", sched.Next(due)))
		cond := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonScheduleValid))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// The backup path finishes the job; the Plan notices through its
	// watch of the jobs it owns and prunes nothing (one job, below the
	// history limit).
	setJobPhase(g, &job, backupsv1alpha1.BackupJobPhaseSucceeded)

	// At the next run time (the test moves the clock and nudges the Plan,
	// instead of waiting out the real requeue) the second job starts.
	next := sched.Next(due)
	clk.SetTime(next.Add(5 * time.Second))
	nudge := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/nudge":"1"}}}`))
	g.Expect(env.Client.Patch(ctx, getPlan(g, p), nudge)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cronschedule.RunName("nightly", next)}, &backupsv1alpha1.BackupJob{})
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
