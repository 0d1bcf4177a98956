package restore

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
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
