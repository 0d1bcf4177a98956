package plankeeper

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// A Plan run by a manager starts its drill when due and records the
// drill's end as soon as the RestoreJob says so, by watching the
// RestoreJobs it owns: the rehearsed Backup is deleted meanwhile, so only
// the owner reference leads the event to the Plan, and nothing polls (the
// next requeue is minutes away).
func TestDrillEndIsSeenThroughItsOwner(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(g)
	p := createPlan(g, ns, "nightly", "0 3 * * *", withDrill("*/5 * * * *", 24*time.Hour))
	judgedBackup(g, ns, "good", "nightly", p.CreationTimestamp.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	due := nthRun(mustParse(t, "*/5 * * * *"), p.CreationTimestamp.Time, 1)
	clk := clocktesting.NewFakeClock(due.Add(20 * time.Second))

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 driverscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The end-to-end test of the schedule runs a manager of its own.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
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

	var rj backupsv1alpha1.RestoreJob
	key := client.ObjectKey{Namespace: ns, Name: drillName(g, p, due)}
	g.Eventually(func() error { return env.Client.Get(ctx, key, &rj) }).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(rj.Spec.BackupRef.Name).To(Equal("good"))
	g.Eventually(func(g Gomega) { g.Expect(record(g, p).LastDrillTime).NotTo(BeNil()) }).WithTimeout(20 * time.Second).Should(Succeed())

	var b backupsv1alpha1.Backup
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "good"}, &b)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &b)).To(Succeed())
	ended := due.Add(time.Minute).Truncate(time.Second)
	clk.SetTime(ended.Add(time.Second))
	endDrill(g, &rj, backupsv1alpha1.RestoreJobPhaseSucceeded, ended, "rehearsed")
	g.Eventually(func(g Gomega) {
		st := record(g, p)
		g.Expect(st.LastRehearsal).NotTo(BeNil())
		g.Expect(st.LastRehearsal.Succeeded).To(BeTrue())
		g.Expect(st.LastSuccessfulRehearsalTime).NotTo(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
