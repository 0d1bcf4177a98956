package restore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kamajistandin"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// withControlPlane gives ns a Kamaji DataStore pointing at its etcd and a
// TenantControlPlane storing in it, whose prior write permissions block
// deletions only (so lifting the fence must put exactly that back).
func withControlPlane(t *testing.T, ns string) *kamajiv1alpha1.TenantControlPlane {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(kamajistandin.CreateControlPlane(ctx, k, ns, "tenant-k8s", clusterName)).To(Succeed())
	t.Cleanup(func() {
		ds := &kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		_ = k.Delete(context.Background(), ds)
	})
	tcp := &kamajiv1alpha1.TenantControlPlane{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-k8s"}, tcp)).To(Succeed())
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Spec.WritePermissions = kamajiv1alpha1.WritePermissions{BlockDelete: true}
	g.Expect(k.Patch(ctx, tcp, patch)).To(Succeed())
	return tcp
}

func getTCP(g Gomega, ns string) *kamajiv1alpha1.TenantControlPlane {
	tcp := &kamajiv1alpha1.TenantControlPlane{}
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tenant-k8s"}, tcp)).To(Succeed())
	return tcp
}

func controlPlanePods(g Gomega, ns string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(k.List(context.Background(), &pods, client.InNamespace(ns), cpfence.PodLabels("tenant-k8s"))).To(Succeed())
	return pods.Items
}

// The whole Kubernetes-safe restore: the control plane is read-only before
// anything is touched, the snapshot is staged with the revision raised
// above the live one, the cluster boots from the staging claim, the
// kube-apiserver is restarted on it, the fence is lifted back to exactly
// the prior permissions, and the claim lives as long as the cluster.
func TestControlPlaneFencedStagedRestartedAndLifted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	tcp := withControlPlane(t, ns)
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	old := getCluster(g, ns)
	g.Eventually(func(g Gomega) { g.Expect(controlPlanePods(g, ns)).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
	oldPod := controlPlanePods(g, ns)[0].UID
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-k8s"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

	// Staging held: fenced and acknowledged, live cluster untouched.
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonStaging)
	fenced := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesFenced)
	g.Expect(fenced).NotTo(BeNil())
	g.Expect(fenced.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(fenced.Message).To(ContainSubstring(ns + "/tenant-k8s"))
	cur := getTCP(g, ns)
	g.Expect(cur.Spec.WritePermissions).To(Equal(kamajiv1alpha1.WritePermissions{BlockCreate: true, BlockUpdate: true, BlockDelete: true}))
	g.Expect(cur.Annotations).To(HaveKeyWithValue(backupsv1alpha1.FencedByAnnotation, string(rj.UID)))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	job := stagingJobOf(t, ns, "restore")
	claimName := job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
	g.Expect(job.Name).NotTo(Equal(stagingjob.Name(rj.UID)), "a name the tenant could not know beforehand")
	g.Expect(claimName).NotTo(Equal(job.Name), "the claim's name (which the Job shows) tells nothing of the Job's")
	g.Expect(job.Annotations).To(HaveKeyWithValue(liveRevisionAnnotation, "4242"))
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).To(ContainSubstring("--revision-floor=4242"))
	g.Expect(args).To(ContainSubstring("--key=tenant/etcd/nightly-k8s.db"))
	g.Expect(job.Spec.Template.Spec.InitContainers).To(HaveLen(1), "the safety snapshot is staged too")

	op.Set(func(op *testenv.Operator) { op.HoldStaging = false })
	rj = waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)

	c := getCluster(g, ns)
	g.Expect(c.GetUID()).NotTo(Equal(old.GetUID()))
	g.Expect(bootstrapKey(c)).To(Equal("tenant/etcd/nightly-k8s.db"))
	raised := condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionRaised)))
	g.Expect(raised.Message).To(ContainSubstring("4242"))
	g.Expect(raised.Message).To(ContainSubstring("PersistentVolumeClaim " + claimName))
	restarted := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesRestarted)
	g.Expect(restarted).NotTo(BeNil())
	g.Expect(restarted.Status).To(Equal(metav1.ConditionTrue), restarted.Message)
	fenced = condition(rj, backupsv1alpha1.RestoreConditionControlPlanesFenced)
	g.Expect(fenced.Reason).To(Equal(string(backupsv1alpha1.ReasonFenceLifted)))

	// The kube-apiserver Pod is a new one; the fence is gone, the prior
	// permissions are back.
	for _, p := range controlPlanePods(g, ns) {
		g.Expect(p.UID).NotTo(Equal(oldPod))
	}
	cur = getTCP(g, ns)
	g.Expect(cur.Spec.WritePermissions).To(Equal(tcp.Spec.WritePermissions))
	g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))
	g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.PriorWritePermissionsAnnotation))
	g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.RestartedPodsAnnotation))

	// The finished Job is left to Kubernetes' TTL (no delete of the
	// driver's); the claim belongs to the cluster that boots from it.
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	g.Expect(job.DeletionTimestamp).To(BeNil())
	g.Expect(job.Spec.TTLSecondsAfterFinished).To(HaveValue(BeEquivalentTo(stagingjob.TTLAfterFinished / time.Second)))
	g.Expect(countOf(writes.of(ns), "delete Job")).To(BeZero())
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName}, pvc)).To(Succeed())
	g.Expect(pvc.OwnerReferences).To(ContainElement(HaveField("UID", c.GetUID())))
}

// Attack: the object is replaced after the pre-flight verified it. The
// staging Job, which accepts only the verified size and sha256, refuses it
// (staging.ExitRefused): the restore fails before anything is destroyed, the fence
// is lifted and the claim removed.
func TestSwappedObjectIsRefusedBeforeThePurge(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	tcp := withControlPlane(t, ns)
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) {
		op.RefuseStaging = func(key string) bool { return key == "tenant/etcd/nightly-swap.db" }
	})
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-swap"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonStagingRefused)))
	g.Expect(rj.Status.Message).To(ContainSubstring("the live cluster was not touched"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	cur := getTCP(g, ns)
	g.Expect(cur.Spec.WritePermissions).To(Equal(tcp.Spec.WritePermissions))
	g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionControlPlanesRestarted)).To(BeNil(), "nothing was replaced, nothing restarted")
	_, err := getCapture(g, rj)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a restore that destroyed nothing leaves no capture behind: %v", err)
	// StagingRefused: the staging Job ran on its claim; both go with the
	// refusal (the Job with its Pods, so that no Pod holds the claim).
	g.Eventually(func(g Gomega) {
		var pvcs corev1.PersistentVolumeClaimList
		g.Expect(k.List(ctx, &pvcs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)})).To(Succeed())
		for _, pvc := range pvcs.Items {
			g.Expect(pvc.DeletionTimestamp).NotTo(BeNil(), "the unused staging claim %s is deleted", pvc.Name)
		}
		var jobs batchv1.JobList
		g.Expect(k.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)})).To(Succeed())
		for _, j := range jobs.Items {
			g.Expect(j.DeletionTimestamp).NotTo(BeNil(), "the refused staging Job %s is deleted", j.Name)
		}
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// A live revision that cannot be read raises the revision by etcd's
// recommended bump, and the status says why; no control plane: the
// restore goes on and says so.
func TestUnreadableLiveRevisionBumpsBlind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	testRevisions.fail(ns, fmt.Errorf("%w: Secret %s/%s does not exist", liverevision.ErrNoCredentials, ns, liverevision.ClientSecretName))
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-blind"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	raised := condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionBumpedBlind)))
	g.Expect(raised.Message).To(ContainSubstring("Secret etcd-client-tls is missing or holds no usable client certificate"))
	g.Expect(raised.Message).To(ContainSubstring("1000000000"))
	fenced := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesFenced)
	g.Expect(fenced).NotTo(BeNil())
	g.Expect(fenced.Reason).To(Equal(string(backupsv1alpha1.ReasonNoControlPlanes)))
}

// bumpRevision: false is the operator's own S3 route, said in status.
func TestBumpRevisionFalseRestoresFromS3(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-plain"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", `{"bumpRevision": false}`))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := getCluster(g, ns)
	key, _, _ := unstructured.NestedString(c.Object, "spec", "bootstrap", "restore", "source", "s3", "key")
	g.Expect(key).To(Equal("tenant/etcd/nightly-plain.db"))
	raised := condition(rj, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionNotRaised)))
}

// A Backup being deleted is not restored from: its object may go at any
// moment. Nothing is touched.
func TestBackupBeingDeletedIsNotRestored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	old := getCluster(g, ns)
	b := ourBackup(ns, "going", "going-abcde")
	b.Finalizers = []string{"example.com/hold"}
	g.Expect(k.Create(ctx, b)).To(Succeed())
	t.Cleanup(func() {
		cur := &backupsv1alpha1.Backup{}
		if k.Get(context.Background(), client.ObjectKeyFromObject(b), cur) == nil {
			cur.Finalizers = nil
			_ = k.Update(context.Background(), cur)
		}
	})
	g.Expect(k.Delete(ctx, b)).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "going", ""))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonBackupNotReady)))
	g.Expect(rj.Status.Message).To(ContainSubstring("being deleted"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
}

// Attack (issue 32, item 1): tenant B creates a TenantControlPlane in its
// own namespace naming tenant A's DataStore. A's restore must not fence it
// (B would read A's RestoreJob UID from the fence annotation, and A's
// restore would wait for a WriteLimited no Kamaji of A's ever reports),
// while a child tenant's control plane, in a namespace Cozystack labels as
// sharing A's etcd (namespace.cozystack.io/etcd: A), is fenced, restarted
// and lifted like A's own.
func TestForeignControlPlaneIsNotFenced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := newNamespace(t)
	deployApp(t, a, appOpts{})
	withControlPlane(t, a)
	startOperator(t, a)

	// Tenant B: its own namespace, its control plane on A's DataStore. No
	// Kamaji of B's acknowledges anything (nothing plays Kamaji there).
	b := newNamespace(t)
	intruder := kamajistandin.TenantControlPlane(b, "intruder", a)
	g.Expect(k.Create(ctx, intruder)).To(Succeed())
	// A child tenant of A, without an etcd of its own: Cozystack's tenant
	// chart labels its namespace with the etcd it uses.
	child := newNamespace(t)
	ns := &corev1.Namespace{}
	g.Expect(k.Get(ctx, client.ObjectKey{Name: child}, ns)).To(Succeed())
	ns.Labels = map[string]string{"namespace.cozystack.io/etcd": a}
	g.Expect(k.Update(ctx, ns)).To(Succeed())
	g.Expect(k.Create(ctx, kamajistandin.TenantControlPlane(child, "tenant-k8s", a))).To(Succeed())
	startOperator(t, child) // plays Kamaji for the child's control plane

	g.Expect(k.Create(ctx, ourBackup(a, "nightly", "nightly-foreign"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(a, "restore", "nightly", ""))).To(Succeed())

	rj := waitPhase(t, a, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	fenced := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesFenced)
	g.Expect(fenced).NotTo(BeNil())
	g.Expect(fenced.Reason).To(Equal(string(backupsv1alpha1.ReasonFenceLifted)))
	g.Expect(rj.Status.Message).NotTo(ContainSubstring(b))
	for _, c := range rj.Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(b + "/intruder"))
	}
	// B's control plane was never touched: no annotation of the driver's,
	// its permissions as they were, no patch by the driver.
	got := &kamajiv1alpha1.TenantControlPlane{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: b, Name: "intruder"}, got)).To(Succeed())
	g.Expect(got.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))
	g.Expect(got.Spec.WritePermissions).To(Equal(kamajiv1alpha1.WritePermissions{}))
	g.Expect(writes.of(b)).To(BeEmpty(), "the driver wrote nothing in tenant B's namespace")
	// The child's was fenced, restarted and lifted with A's.
	g.Expect(writes.of(child)).To(ContainElement("patch TenantControlPlane"))
	g.Expect(getTCP(g, child).Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))
	restarted := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesRestarted)
	g.Expect(restarted).NotTo(BeNil())
	g.Expect(restarted.Message).To(ContainSubstring(child + "/tenant-k8s"))
	g.Expect(restarted.Message).To(ContainSubstring(a + "/tenant-k8s"))
}

// A fence is lifted by what the restore recorded when it fenced, not by a
// fresh search (issue 37, item 12): between the fence and the lift, the
// namespace of a fenced child control plane loses the sharing label
// (namespace.cozystack.io/etcd), and another namespace, whose control plane
// names the same DataStore, gains it. Every control plane fenced is
// restarted and lifted; the one never fenced is not touched.
func TestFenceIsLiftedByItsRecordWhateverTheLabelsSayNow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := newNamespace(t)
	deployApp(t, a, appOpts{})
	own := withControlPlane(t, a)
	op := startOperator(t, a)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	label := func(ns, etcd string) {
		n := &corev1.Namespace{}
		g.Expect(k.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		n.Labels = map[string]string{}
		if etcd != "" {
			n.Labels[cpfence.EtcdNamespaceLabel] = etcd
		}
		g.Expect(k.Update(ctx, n)).To(Succeed())
	}
	child, late := newNamespace(t), newNamespace(t)
	label(child, a)
	for _, ns := range []string{child, late} {
		tcp := kamajistandin.TenantControlPlane(ns, "tenant-k8s", a)
		g.Expect(unstructured.SetNestedField(tcp.Object, true, "spec", "writePermissions", "blockUpdate")).To(Succeed())
		g.Expect(k.Create(ctx, tcp)).To(Succeed())
		startOperator(t, ns) // plays Kamaji there
	}
	g.Expect(k.Create(ctx, ourBackup(a, "nightly", "nightly-relabel"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(a, "restore", "nightly", ""))).To(Succeed())

	rj := waitReason(t, a, "restore", backupsv1alpha1.ReasonStaging)
	for _, ns := range []string{a, child} {
		g.Expect(getTCP(g, ns).Annotations).To(HaveKeyWithValue(backupsv1alpha1.FencedByAnnotation, string(rj.UID)), "%s fenced", ns)
	}
	lateBefore := getTCP(g, late)
	g.Expect(lateBefore.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))

	// The labels change; the driver reads them again past its minute.
	label(child, "")
	label(late, a)
	sharingSkew.Add(int64(2 * time.Minute))
	op.Set(func(op *testenv.Operator) { op.HoldStaging = false })

	rj = waitPhase(t, a, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	for ns, prior := range map[string]kamajiv1alpha1.WritePermissions{a: own.Spec.WritePermissions, child: {BlockUpdate: true}} {
		cur := getTCP(g, ns)
		g.Expect(cur.Spec.WritePermissions).To(Equal(prior), "%s lifted to its prior permissions", ns)
		g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation), "%s lifted", ns)
		g.Expect(cur.Annotations).NotTo(HaveKey(backupsv1alpha1.PriorWritePermissionsAnnotation), "%s lifted", ns)
	}
	restarted := condition(rj, backupsv1alpha1.RestoreConditionControlPlanesRestarted)
	g.Expect(restarted).NotTo(BeNil())
	g.Expect(restarted.Message).To(And(ContainSubstring(a+"/tenant-k8s"), ContainSubstring(child+"/tenant-k8s")))
	g.Expect(restarted.Message).NotTo(ContainSubstring(late))
	lateAfter := getTCP(g, late)
	g.Expect(lateAfter.Spec).To(Equal(lateBefore.Spec), "the control plane never fenced was changed")
	g.Expect(lateAfter.Annotations).To(Equal(lateBefore.Annotations))
	g.Expect(writes.of(late)).To(BeEmpty(), "the driver wrote in the namespace it never fenced")
	// The record goes with the restore.
	var records corev1.ConfigMapList
	g.Expect(k.List(ctx, &records, client.InNamespace(testenv.DriverNamespace), client.MatchingLabels{backupsv1alpha1.RestoreJobUIDLabel: string(rj.UID)})).To(Succeed())
	g.Expect(records.Items).To(BeEmpty(), "what the restore kept in the driver's namespace outlives it")
}

// The staging Job uses plain http only where the Backup's Etcd strategy
// allows it (spec.allowHTTPEndpoint): it used to be allowed always. A
// The staging Job uses plain http only where the StrategyPolicy of the
// Backup's Etcd strategy allows it (spec.allowHTTPEndpoint): it used to be
// allowed always. A
// Backup at an http endpoint whose strategy does not allow http is refused
// before anything is touched, and no staging Job is made.
func TestStagingFollowsTheStrategysHTTPSetting(t *testing.T) {
	ctx := context.Background()
	t.Run("allowed", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		op := startOperator(t, ns)
		op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
		g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-http"))).To(Succeed())
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
		waitReason(t, ns, "restore", backupsv1alpha1.ReasonStaging)
		job := stagingJobOf(t, ns, "restore")
		g.Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--allow-http"))
		op.Set(func(op *testenv.Operator) { op.HoldStaging = false })
		waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	})

	t.Run("not allowed", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		startOperator(t, ns)
		httpsOnly := &strategyv1alpha1.Etcd{}
		g.Expect(k.Get(ctx, client.ObjectKey{Name: "default"}, httpsOnly)).To(Succeed())
		// A copy under another name has no StrategyPolicy: https only.
		httpsOnly.ObjectMeta = metav1.ObjectMeta{Name: "https-only-" + ns}
		g.Expect(k.Create(ctx, httpsOnly)).To(Succeed())
		t.Cleanup(func() { _ = k.Delete(context.Background(), httpsOnly) })
		b := ourBackup(ns, "nightly", "nightly-https-only")
		b.Spec.StrategyRef.Name = httpsOnly.Name
		g.Expect(k.Create(ctx, b)).To(Succeed())
		old := getCluster(g, ns)
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

		rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonEndpointRefused)), rj.Status.Message)
		g.Expect(rj.Status.Message).To(ContainSubstring("allowHTTPEndpoint"))
		g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
		var jobs batchv1.JobList
		g.Expect(k.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)})).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty(), "a staging Job was made")
	})
}
