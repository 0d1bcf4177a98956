package restore

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// fluxSays is Flux's Ready condition on the HelmRelease, for generation gen.
func fluxSays(o *observation, status metav1.ConditionStatus, gen int64) {
	o.hr.Generation = 4
	o.hr.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: "UpgradeSucceeded", ObservedGeneration: gen}}
}

// The hand-back waits, under its claim, for Flux to reconcile the
// HelmRelease this process resumed, and only within fluxGrace of it.
func TestHandBackWaitsForFlux(t *testing.T) {
	resumed := func(ago time.Duration) *observation {
		o := sealedWorld(3, true)
		resumedBySeal(o)
		o.resumedAt = o.now.Add(-ago)
		return o
	}
	t.Run("resumed a moment ago, Flux not there yet: wait until the grace ends", func(t *testing.T) {
		g := NewWithT(t)
		o := resumed(time.Second)
		fluxSays(o, metav1.ConditionTrue, 3)
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateWaitHelmRelease))
		g.Expect(d.deadline).To(Equal(o.resumedAt.Add(fluxGrace)))
	})
	for name, status := range map[string]metav1.ConditionStatus{"Ready": metav1.ConditionTrue, "not Ready": metav1.ConditionFalse} {
		t.Run("Flux reconciled the resumed generation ("+name+"): the claim goes and the end carries the verdict", func(t *testing.T) {
			g := NewWithT(t)
			o := resumed(time.Second)
			fluxSays(o, status, 4)
			g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
			o.holder = nil
			d := decide(o, time.Hour)
			g.Expect(d.state).To(Equal(stateFinish))
			c := helmReleaseCondition(desiredStatus(o, d))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(status))
		})
	}
	t.Run("Flux upgrading (Ready Unknown at the resumed generation): still waiting", func(t *testing.T) {
		g := NewWithT(t)
		o := resumed(time.Second)
		fluxSays(o, metav1.ConditionUnknown, 4)
		g.Expect(decide(o, time.Hour).state).To(Equal(stateWaitHelmRelease))
	})
	t.Run("past the grace: the end is written, Flux's verdict follows it", func(t *testing.T) {
		g := NewWithT(t)
		o := resumed(fluxGrace)
		g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
	})
	t.Run("a resume this process did not see (a restart): no wait", func(t *testing.T) {
		g := NewWithT(t)
		o := resumed(time.Second)
		o.resumedAt = time.Time{}
		g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
	})
	t.Run("a HelmRelease that was left suspended: nothing to wait for", func(t *testing.T) {
		g := NewWithT(t)
		o := resumed(time.Second)
		o.capture.hrPrior = hrSuspended
		g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
	})
}

// A HelmRelease suspended and resumed again during the wait does not
// start the grace again: the claim is held at most fluxGrace after the
// first resume.
func TestFluxGraceCountsFromTheFirstResume(t *testing.T) {
	g := NewWithT(t)
	var r resumes
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	r.add("job", t0)
	r.add("job", t0.Add(20*time.Second))
	g.Expect(r.at("job")).To(Equal(t0))
	r.add("other", t0.Add(fluxGrace+time.Second))
	g.Expect(r.at("job")).To(BeZero(), "an entry past its grace is dropped")
	r.add("job", t0.Add(fluxGrace+2*time.Second))
	g.Expect(r.at("job")).To(Equal(t0.Add(fluxGrace + 2*time.Second)))
}

// restoreWithFluxSilent runs a restore until it has resumed the
// HelmRelease, with the operator's Flux holding back its verdict.
func restoreWithFluxSilent(t *testing.T) (string, *testenv.Operator) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldHelmRelease = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-x1y2z"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
		g.Expect(writes.of(ns)).To(ContainElement("patch HelmRelease suspend=false"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	return ns, op
}

// A restore whose HelmRelease Flux takes a moment to reconcile ends once,
// Succeeded with Flux's verdict, and writes no status after its end. Seen
// failing before the wait: the end said "waiting for it to reconcile" and
// a second status write followed it once Flux had.
func TestEndCarriesFluxVerdict(t *testing.T) {
	g := NewWithT(t)
	ns, op := restoreWithFluxSilent(t)
	// Resumed, Flux silent: the job holds its claim and has not ended.
	g.Consistently(func(g Gomega) {
		g.Expect(getJob(g, ns, "restore").Status.Phase.IsTerminal()).To(BeFalse())
		g.Expect(claimHolder(g, ns)).NotTo(BeNil())
	}).WithTimeout(time.Second).Should(Succeed())

	op.Set(func(op *testenv.Operator) { op.HoldHelmRelease = false })
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(string(backupsv1alpha1.ReasonHelmReleaseReady)))
	g.Expect(claimHolder(g, ns)).To(BeNil())
	// From the resume on: the claim's release and one status write, the end.
	time.Sleep(time.Second)
	all := writes.of(ns)
	var after []string
	for i, w := range all {
		if w == "patch HelmRelease suspend=false" {
			after = all[i+1:]
		}
	}
	var statuses []string
	for _, w := range after {
		if strings.HasPrefix(w, "status") {
			statuses = append(statuses, w)
		}
	}
	g.Expect(statuses).To(Equal([]string{"status Succeeded"}), "writes after the resume: %v", after)
}

// Flux that does not reconcile within the grace does not hold the restore:
// it ends Succeeded, waiting for Flux, and reports Flux's verdict later.
func TestFluxSilentPastTheGrace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, op := restoreWithFluxSilent(t)

	// Past the grace; a touch of the HelmRelease wakes the job.
	clockSkew.Store(int64(fluxGrace + time.Second))
	t.Cleanup(func() { clockSkew.Store(0) })
	hr := getHR(g, ns)
	g.Expect(k.Patch(ctx, hr, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled).Reason).
		To(Equal(string(backupsv1alpha1.ReasonHelmReleaseReconciling)))
	op.Set(func(op *testenv.Operator) { op.HoldHelmRelease = false })
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getJob(g, ns, "restore"), backupsv1alpha1.RestoreConditionHelmReleaseReconciled).Reason).
			To(Equal(string(backupsv1alpha1.ReasonHelmReleaseReady)))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
