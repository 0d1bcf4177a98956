package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// progressDeadlineOf is a cluster's spec.progressDeadlineSeconds (0 when
// unset).
func progressDeadlineOf(u *unstructured.Unstructured) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, "spec", "progressDeadlineSeconds")
	return v
}

// The re-create raises spec.progressDeadlineSeconds to the restore's
// budget; once the cluster is healthy it is the captured value again, not
// a deadline of the driver's making left on the tenant's cluster.
func TestProgressDeadlineReturnsToCaptured(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{mutate: func(u *unstructured.Unstructured) {
		g.Expect(unstructured.SetNestedField(u.Object, int64(1234), "spec", "progressDeadlineSeconds")).To(Succeed())
	}})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false,"restoreTimeoutSeconds":3600}`))).To(Succeed())
	waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	raised := progressDeadlineOf(getCluster(g, ns))
	g.Expect(raised).To(BeNumerically(">", 3000), "the re-create gives the operator the restore's budget")

	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := getCluster(g, ns)
	g.Expect(progressDeadlineOf(c)).To(BeEquivalentTo(1234))
	g.Expect(bootstrapKey(c)).To(Equal(testPrefix + "b-aaaaa.db"))
	g.Expect(countOf(writes.of(ns), "patch EtcdCluster")).To(Equal(1))
	g.Consistently(func(g Gomega) {
		g.Expect(progressDeadlineOf(getCluster(g, ns))).To(BeEquivalentTo(1234))
	}).WithTimeout(time.Second).Should(Succeed())
}

// replaceCluster plays someone putting EtcdCluster etcd back after the
// purge, as the chart renders it (no restore source): it deletes the
// cluster the restore re-created and creates build(ns) in its place. A
// member PVC it holds meanwhile keeps the driver waiting for the purge, so
// the driver's own re-create (which writes no status first) cannot win
// the race. It returns the UID of the cluster it created.
func replaceCluster(t *testing.T, ns string, build func(ns string) *unstructured.Unstructured) types.UID {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	// The operator deletes a deleted cluster's member PVCs, but not one
	// held.
	hold := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-etcd-hold", Labels: MemberPVCLabels(),
		Annotations: map[string]string{testenv.HeldPVCAnnotation: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	g.Expect(k.Create(ctx, hold)).To(Succeed())
	var uid types.UID
	g.Eventually(func(g Gomega) {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
		err := k.Get(ctx, keyOf(ns, clusterName), c)
		switch {
		case apierrors.IsNotFound(err):
			fresh := build(ns)
			if k.Create(ctx, fresh) == nil {
				uid = fresh.GetUID()
				// An empty cluster the operator brings up at once.
				_ = testenv.MarkHealthy(ctx, k, keyOf(ns, clusterName))
			}
		case err == nil && c.GetDeletionTimestamp() == nil && c.GetAnnotations()[backupsv1alpha1.RestoredByAnnotation] != "":
			_ = k.Delete(ctx, c)
		}
		g.Expect(uid).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
	g.Expect(k.Delete(ctx, hold)).To(Succeed())
	return uid
}

// After the purge a human resumes the HelmRelease and Flux re-creates
// EtcdCluster etcd from the chart: an empty cluster without the restore's
// source. The restore suspends the HelmRelease again, deletes that cluster
// and re-creates its own; it never concludes on the chart's cluster. A
// cluster the HelmRelease does not own is left alone, and the restore
// fails saying so, with the HelmRelease kept suspended.
func TestClusterRecreatedAfterPurge(t *testing.T) {
	start := func(t *testing.T) (string, *testenv.Operator, *backupsv1alpha1.RestoreJob) {
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		op := startOperator(t, ns)
		op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
		g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
		rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
		hr := getHR(g, ns)
		hr.Spec.Suspend = false
		g.Expect(k.Update(ctx, hr)).To(Succeed(), "a human resumes the HelmRelease")
		return ns, op, rj
	}

	t.Run("the HelmRelease's cluster is rolled over", func(t *testing.T) {
		g := NewWithT(t)
		ns, op, rj := start(t)
		chart := replaceCluster(t, ns, func(ns string) *unstructured.Unstructured { return liveCluster(ns, "") })
		g.Eventually(func(g Gomega) {
			c := getCluster(g, ns)
			g.Expect(c.GetUID()).NotTo(Equal(chart))
			g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the chart's cluster is replaced by the restore's")
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue(), "suspended again before the chart's cluster was deleted")
		g.Expect(eventReasons(ns)).To(ContainElement(string(backupsv1alpha1.ReasonReplacingRecreatedCluster)))

		op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
		done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
		c := getCluster(g, ns)
		g.Expect(c.GetUID()).NotTo(Equal(chart))
		g.Expect(bootstrapKey(c)).To(Equal(testPrefix + "b-aaaaa.db"))
		g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(done.UID)))
		g.Expect(countOf(writes.of(ns), "delete EtcdCluster")).To(Equal(2), "the purge, then the chart's cluster")
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	})

	t.Run("a cluster the HelmRelease does not own is left alone", func(t *testing.T) {
		g := NewWithT(t)
		ns, _, _ := start(t)
		other := replaceCluster(t, ns, func(ns string) *unstructured.Unstructured {
			u := liveCluster(ns, "")
			u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "someone"})
			return u
		})
		done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(done)).To(Equal(string(backupsv1alpha1.ReasonClusterReplaced)), done.Status.Message)
		g.Expect(getCluster(g, ns).GetUID()).To(Equal(other), "not deleted")
		g.Expect(countOf(writes.of(ns), "delete EtcdCluster")).To(Equal(1), "the purge only")
		expectKeptSuspended(t, ns, done)
	})
}

// After a restore failed without a rollback (cluster broken, HelmRelease
// kept suspended, capture kept), a human deletes the broken cluster. A
// restore of the safety Backup into the absent cluster takes its shape
// from that capture (the driver's, in its namespace) and brings the data
// back; without safetySnapshot: false it is refused, and a look-alike
// capture in the tenant's namespace does not count.
func TestRestoreIntoAbsentClusterFromCapture(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) {
		op.FailBootstrap = func(key string) bool { return key == testPrefix+"b-bbbbb.db" }
	})
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-bbbbb"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "first", "b", `{"rollback":false}`))).To(Succeed())
	first := waitPhase(t, ns, "first", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(first)).To(Equal(string(backupsv1alpha1.ReasonBootstrapFailed)))
	prior, err := getCapture(g, first)
	g.Expect(err).NotTo(HaveOccurred())
	broken := getCluster(g, ns)
	g.Expect(k.Delete(ctx, broken)).To(Succeed(), "a human deletes the broken cluster")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k.Get(ctx, keyOf(ns, clusterName), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": etcdv1alpha2.GroupVersion.String(), "kind": "EtcdCluster"}}))
	}).WithTimeout(10 * time.Second).Should(BeTrue())

	t.Run("a look-alike capture in the tenant's namespace does not count", func(t *testing.T) {
		g := NewWithT(t)
		fake := prior.DeepCopy()
		fake.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "look-alike", Labels: prior.Labels}
		g.Expect(k.Create(ctx, fake)).To(Succeed())
		other := newNamespace(t)
		deployApp(t, other, appOpts{noCluster: true})
		// The same ConfigMap, in the tenant's namespace of a cluster that
		// has no capture of its own.
		fake = prior.DeepCopy()
		fake.ObjectMeta = metav1.ObjectMeta{Namespace: other, Name: "look-alike", Labels: map[string]string{}}
		for key, v := range prior.Labels {
			fake.Labels[key] = v
		}
		fake.Labels[backupsv1alpha1.CaptureForLabel] = other
		g.Expect(k.Create(ctx, fake)).To(Succeed())
		g.Expect(k.Create(ctx, ourBackup(other, "b", "b-ddddd"))).To(Succeed())
		g.Expect(k.Create(ctx, newRestoreJob(other, "restore", "b", `{"safetySnapshot":false}`))).To(Succeed())
		rj := waitPhase(t, other, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonSourceClusterNotFound)))
		g.Expect(rj.Status.Message).To(ContainSubstring("no restore left a capture"))
	})

	t.Run("without safetySnapshot: false it is refused", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k.Create(ctx, newRestoreJob(ns, "unsafe", safetyName(first), ""))).To(Succeed())
		rj := waitPhase(t, ns, "unsafe", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonClusterNotAvailable)))
		g.Expect(rj.Status.Message).To(ContainSubstring(prior.Name))
		g.Expect(rj.Status.Message).To(ContainSubstring("safetySnapshot: false"))
	})

	t.Run("restored from the safety Backup into the absent cluster", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k.Create(ctx, newRestoreJob(ns, "recover", safetyName(first), `{"safetySnapshot":false}`))).To(Succeed())
		rj := waitPhase(t, ns, "recover", backupsv1alpha1.RestoreJobPhaseSucceeded)
		c := getCluster(g, ns)
		g.Expect(bootstrapKey(c)).To(Equal(testPrefix + safetyName(first) + ".db"))
		g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
		// The captured shape: the chart's metadata and the spec fields.
		g.Expect(c.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		tenant, _, _ := unstructured.NestedString(c.Object, "spec", "additionalMetadata", "labels", "tenant")
		g.Expect(tenant).To(Equal("t1"))
		g.Expect(progressDeadlineOf(c)).To(BeEquivalentTo(600))
		g.Expect(condition(rj, backupsv1alpha1.RestoreConditionSpecCaptured).Message).To(ContainSubstring(prior.Name))
		// The HelmRelease the first restore kept suspended is left so:
		// resuming it is the human's call.
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue())
		g.Expect(condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled).Reason).
			To(Equal(string(backupsv1alpha1.ReasonHelmReleaseLeftSuspended)))
		_, err := getCapture(g, first)
		g.Expect(err).NotTo(HaveOccurred(), "the first restore's capture is kept")
		_, err = getCapture(g, rj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the recovery's own capture went with its success")
	})
}
