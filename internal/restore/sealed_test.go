package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// sealedWorld: this job re-created the cluster from its source, found it
// healthy and sealed it; its members are now as given.
func sealedWorld(ready int32, available bool) *observation {
	o := world()
	o.capture.uid = "old-uid"
	withCondition(o, backupsv1alpha1.RestoreConditionPurged, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterPurged, "gone", t0)
	ours(o, "b", o.capture.source.Key, ready, available)
	sealInCapture(o)
	deadline := int32(600)
	o.cluster.Spec.ProgressDeadlineSeconds = &deadline
	return o
}

// resumedBySeal is the hand-back's resume.
func resumedBySeal(o *observation) {
	o.hr.Spec.Suspend = false
}

func helmReleaseCondition(st backupsv1alpha1.RestoreJobStatus) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
}

// A member not ready at a later look (restarting, or long after a crash)
// does not undo a sealed success: the HelmRelease is not kept suspended,
// and fenced control planes are still restarted. (From an independent
// review: both failed before usableCluster and restartDue took the seal.)
func TestSealedSuccessOutlivesAMemberNotReady(t *testing.T) {
	t.Run("fenced control planes: concluded first, HelmRelease to be resumed", func(t *testing.T) {
		g := NewWithT(t)
		o := sealedWorld(2, true)
		o.planes.Items = []kamajiv1alpha1.TenantControlPlane{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tcp",
			Annotations: map[string]string{backupsv1alpha1.FencedByAnnotation: string(o.job.UID)}}}}
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateConclude))
		g.Expect(d.success).To(BeTrue())
		c := helmReleaseCondition(desiredStatus(o, d))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).NotTo(Equal(string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended)))
		g.Expect(restartDue(o)).To(BeTrue(), "the control planes are restarted on the sealed cluster")
	})
	t.Run("no fence: the end does not say the HelmRelease was kept suspended", func(t *testing.T) {
		g := NewWithT(t)
		o := sealedWorld(2, true)
		resumedBySeal(o)
		o.holder = nil
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateFinish))
		g.Expect(d.success).To(BeTrue())
		g.Expect(d.message).To(ContainSubstring("all 3 members were ready"))
		c := helmReleaseCondition(desiredStatus(o, d))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).NotTo(Equal(string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended)))
	})
}

// Once the HelmRelease is resumed, helm-controller may rewrite the cluster
// (an upgrade with spec.upgrade.force drops the driver's annotations)
// before the end is written; the seal in the capture, which names the
// cluster by UID, keeps the success. Without a seal out of Flux's reach
// (review findings): the healthy restored cluster was rolled over while
// the claim was held, rolled back past the deadline, and the restore ended
// Failed ClaimLost once the claim was gone.
func TestSealInTheCaptureOutlivesTheClustersMarks(t *testing.T) {
	rewritten := func() *observation {
		o := sealedWorld(3, true)
		resumedBySeal(o)
		o.cluster.Annotations = map[string]string{}
		o.cluster.Spec.Bootstrap = nil
		return o
	}
	t.Run("claim held: the hand-back goes on, the cluster is left alone", func(t *testing.T) {
		g := NewWithT(t)
		o := rewritten()
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateReleaseClaim))
		o.hr.Spec.Suspend = true // suspended by someone: still not rolled over
		g.Expect(decide(o, time.Hour).state).NotTo(BeElementOf(stateDeleteCluster, stateSuspendHelmRelease, stateStartRollback))
	})
	t.Run("past the deadline: no rollback", func(t *testing.T) {
		g := NewWithT(t)
		o := rewritten()
		o.now = t0.Add(2 * time.Hour)
		g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
	})
	t.Run("claim released and taken by the next RestoreJob, which replaced the cluster: Succeeded", func(t *testing.T) {
		g := NewWithT(t)
		o := rewritten()
		o.holder = &claim.Holder{Namespace: "ns", Name: "next", UID: "uid-2"}
		o.cluster.Annotations = map[string]string{backupsv1alpha1.RestoredByAnnotation: "uid-2"}
		o.cluster.UID = "newer-uid"
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateFinish))
		g.Expect(d.success).To(BeTrue())
	})
}

// A sealed success not yet written hands the HelmRelease back only under
// its claim (found by a second review: after the claim release it resumed
// a HelmRelease another restore had kept suspended); a human's resume
// before the driver's changes nothing, the seal being in the capture.
func TestSealedHandBackOnlyUnderTheClaim(t *testing.T) {
	t.Run("claim released, HelmRelease kept suspended by a later restore that failed: left alone", func(t *testing.T) {
		g := NewWithT(t)
		o := sealedWorld(3, true)
		o.holder = nil
		d := decide(o, time.Hour)
		g.Expect(d.state).To(Equal(stateFinish))
		g.Expect(d.success).To(BeTrue())
	})
	t.Run("resumed by a human before the driver: the claim goes", func(t *testing.T) {
		g := NewWithT(t)
		o := sealedWorld(3, true)
		o.hr.Spec.Suspend = false
		g.Expect(decide(o, time.Hour).state).To(Equal(stateReleaseClaim))
	})
}

// A restore in flight across the driver's upgrade (found by an independent
// review of issue 32 item 4): the previous driver sealed its success on
// the re-created cluster (its capture has no format key) and was stopped
// before it resumed the HelmRelease; this process did not create the
// cluster (o.created is empty after the restart). Once the HelmRelease is
// resumed Flux may rewrite the cluster and drop its marks: the seal must be
// in the capture by then. Without that the restore suspended the
// HelmRelease again and deleted the healthy restored cluster.
func TestLegacySealOnTheClusterOutlivesTheResume(t *testing.T) {
	g := NewWithT(t)
	o := world()
	ours(o, "b", o.capture.source.Key, 3, true)
	o.capture.legacy, o.capture.uid = true, "old-uid"
	o.cluster.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(o.job.UID)
	var seen []string
	var last decision
walk:
	for len(seen) < 8 {
		last = decide(o, time.Hour)
		seen = append(seen, last.state.String()+" "+string(last.reason))
		switch last.state {
		case stateCarrySeal:
			// The patch of the capture (act.go, seal).
			o.capture.recreated, o.capture.succeeded = sealedRecreated(o), true
		case stateSuspendHelmRelease:
			o.hr.Spec.Suspend = true
		case stateRestoreHelmRelease:
			o.hr.Spec.Suspend = false
			// Flux rewrites the cluster (same UID, spec.bootstrap is
			// immutable): the driver's marks are gone.
			o.cluster.Annotations = nil
		case stateReleaseClaim:
			o.holder = nil
		default:
			break walk
		}
	}
	g.Expect(seen).To(Equal([]string{"CarrySeal ", "RestoreHelmRelease ", "ReleaseClaim ", "Finish RestoreCompleted"}))
	g.Expect(o.capture.recreated).To(Equal(o.cluster.UID))
	g.Expect(last.success).To(BeTrue())
}

// The same on a real API server, with the driver's writes failing or
// lost around the two that matter. The restore runs to its re-created
// cluster; then the test makes it look like the previous driver's: the
// capture loses its format key (the staging names stay: this driver made
// the staging) and the cluster gets that driver's seal, in one update with
// the progress deadline put back, as its patch did; the driver under test
// forgets that it created the cluster, as the driver started by the
// upgrade never knew. Once the HelmRelease is resumed the test plays Flux
// rewriting the cluster from the chart (the driver's marks gone; same UID
// and spec.bootstrap, which the CRD keeps immutable) while Flux has not
// reconciled yet, so the hand-back is still under the claim. The restored
// cluster must be left alone and the restore end Succeeded, with one
// suspension and one delete.
func TestLegacySealSurvivesFluxRewritingTheCluster(t *testing.T) {
	for _, f := range []*fault{nil,
		{point: "patch ConfigMap"}, {point: "patch ConfigMap", after: true},
		{point: "patch HelmRelease suspend=false"}, {point: "patch HelmRelease suspend=false", after: true},
	} {
		name := "no fault"
		if f != nil {
			name = "fail " + f.point
			if f.after {
				name = "crash after " + f.point
			}
		}
		t.Run(name, func(t *testing.T) { legacySealAcrossTheUpgrade(t, f) })
	}
}

// upgradedDriverForgets makes the driver under test forget what it made
// for job (its staging Job and claim, the re-created cluster), as a
// driver started after the one that made them never knew it.
func upgradedDriverForgets(job types.UID) {
	testReconciler.made.forget(job)
	testReconciler.madeJob.forget(job)
	testReconciler.madeCluster.forget(job)
}

func legacySealAcrossTheUpgrade(t *testing.T, f *fault) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap, op.HoldHelmRelease = true, true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-legacy"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	if f != nil {
		f.ns = ns
		writes.inject(f)
	}
	restored := getCluster(g, ns)
	g.Expect(restored.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
	upgradedDriverForgets(rj.UID)

	cm, err := getCapture(g, rj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"`+captureKeyFormat+`":null}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, ns)
		ann := c.GetAnnotations()
		ann[backupsv1alpha1.RestoreSucceededAnnotation] = string(rj.UID)
		c.SetAnnotations(ann)
		g.Expect(unstructured.SetNestedField(c.Object, int64(600), "spec", "progressDeadlineSeconds")).To(Succeed())
		g.Expect(k.Update(ctx, c)).To(Succeed())
	}).Should(Succeed())

	g.Eventually(func() bool { return getHR(g, ns).Spec.Suspend }).WithTimeout(30*time.Second).Should(BeFalse(), "the HelmRelease is resumed")
	g.Expect(testenv.MarkHealthy(ctx, k, keyOf(ns, clusterName))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, ns)
		ann := c.GetAnnotations()
		for _, a := range []string{backupsv1alpha1.RestoredByAnnotation, backupsv1alpha1.RestoredFromAnnotation, backupsv1alpha1.RestoreSucceededAnnotation} {
			delete(ann, a)
		}
		c.SetAnnotations(ann)
		g.Expect(k.Update(ctx, c)).To(Succeed())
	}).Should(Succeed(), "Flux rewrites the cluster")

	g.Consistently(func(g Gomega) {
		c := getCluster(g, ns)
		g.Expect(c.GetUID()).To(Equal(restored.GetUID()))
		g.Expect(c.GetDeletionTimestamp()).To(BeNil(), "the restored cluster is deleted")
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse(), "the HelmRelease is suspended again")
	}).WithTimeout(2 * time.Second).Should(Succeed())
	op.Set(func(op *testenv.Operator) { op.HoldHelmRelease = false })
	done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(restored.GetUID()))
	g.Expect(condition(done, backupsv1alpha1.RestoreConditionOutcome).Reason).To(Equal(string(backupsv1alpha1.ReasonRestoreCompleted)))
	log := writes.of(ns)
	g.Expect(countOf(log, "patch HelmRelease suspend=true")).To(Equal(1), "writes: %v", log)
	g.Expect(countOf(log, "delete EtcdCluster")).To(Equal(1), "writes: %v", log)
	if f == nil {
		// The seal carried into the capture: the one extra request of a
		// restore across the upgrade.
		g.Expect(countOf(log, "patch ConfigMap")).To(Equal(1), "writes: %v", log)
	}
	if f != nil {
		g.Expect(writes.fired(ns)).To(BeTrue(), "write point %q was never reached", f.point)
	}
}
