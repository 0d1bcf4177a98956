package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
)

// shopNamespaces are the tenant cluster's namespaces of the test, and how
// many ConfigMaps and Secrets each holds.
var shopNamespaces = map[string][2]int{"shop": {6, 2}, "billing": {4, 3}, "tools": {3, 1}}

// The manifest of a Backup counts what the tenant's own kube-apiserver
// serves; deleting namespaces and backing up again marks the new Backup
// ContentDrop and holds the last good one from the Plan's retention
// (keepLast 1), which deletes it once a person releases the hold.
func TestManifestCountsWhatTheControlPlaneServesAndADropIsHeld(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	cs, _ := tn.controlPlane("kubernetes")
	prefix := "/" + tn.ns + "_kubernetes"
	for ns, n := range shopNamespaces {
		_, err := cs.CoreV1().Namespaces().Create(tn.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for i := range n[0] {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(tn.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}
		for i := range n[1] {
			_, err := cs.CoreV1().Secrets(ns).Create(tn.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	plan := &backupsv1alpha1.Plan{
		// The test takes the Plan's Backups itself (suspended: the
		// driver's scheduler starts none); retention keeps one.
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "daily", Annotations: map[string]string{
			planpolicy.Suspend: "true", planpolicy.RetentionKeepLast: "1"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class,
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: "@daily"},
		},
	}
	g.Expect(sb.Client.Create(tn.ctx, plan)).To(Succeed())

	good := tn.awaitManifest(tn.takePlanBackup("good", plan.Name))
	ks := keyspace(g, artifact.Manifest(good), prefix)
	served := servedCounts(tn, cs)
	g.Expect(count(ks.Resources, "configmaps")).To(Equal(served["configmaps"]), "ConfigMaps in the manifest and served")
	g.Expect(count(ks.Resources, "secrets")).To(Equal(served["secrets"]), "Secrets in the manifest and served")
	g.Expect(ks.Namespaces).To(Equal(served["namespaces"]))
	g.Expect(ks.NamespaceNames).To(ConsistOf(servedNamespaces(tn, cs)))
	for ns, n := range shopNamespaces {
		g.Expect(count(ks.TopNamespaces, ns)).To(Equal(int64(n[0]+n[1])), "objects in namespace %s", ns)
	}
	t.Logf("manifest of %s: revision %d, %d keys; %s: %d objects, resources %v", good.Name, artifact.Manifest(good).Revision,
		artifact.Manifest(good).Keys, ks.Prefix, ks.Objects, ks.Resources)

	// Two namespaces deleted by accident (no namespace controller runs
	// here: their objects go first, then the namespace is finalized).
	for _, ns := range []string{"shop", "billing"} {
		g.Expect(cs.CoreV1().ConfigMaps(ns).DeleteCollection(tn.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		g.Expect(cs.CoreV1().Secrets(ns).DeleteCollection(tn.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		deleteNamespace(tn, cs, ns)
	}
	dropped := tn.awaitManifest(tn.takePlanBackup("after-delete", plan.Name))
	c := meta.FindStatusCondition(dropped.Status.Conditions, backupsv1alpha1.BackupConditionContentDrop)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(c.Message).To(ContainSubstring("namespaces gone from " + prefix + ": billing, shop"))
	g.Expect(c.Message).To(ContainSubstring("configmaps in " + prefix))

	// A rehearsal of the good Backup says what a restore would bring back
	// and changes nothing: the cluster, its HelmRelease and its revision
	// stay as they are (a real restore recreates the cluster and raises
	// the revision by at least 10,000).
	var cluster etcdv1alpha2.EtcdCluster
	var hr helmv2.HelmRelease
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &cluster)).To(Succeed())
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &hr)).To(Succeed())
	revBefore := tn.liveRevision()
	rj := tn.awaitRestore(tn.restoreJob("rehearse-good", good.Name, map[string]any{"dryRun": true}), 3*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	rec, ok := rehearsalrecord.Peek(rj)
	g.Expect(ok).To(BeTrue(), "the driver's record on the dry run")
	rep := rec.Report
	g.Expect(rep).NotTo(BeNil())
	g.Expect(rep.NamespacesReturning).To(ConsistOf("billing", "shop"))
	g.Expect(rep.NamespacesVanishing).To(BeEmpty())
	g.Expect(rep.RevisionBefore).To(BeNumerically(">=", revBefore))
	g.Expect(rep.RevisionAfter).To(BeNumerically(">", rep.RevisionBefore))
	g.Expect(rep.Resources).To(ContainElement(driverv1alpha1.CountChange{Name: "configmaps",
		Before: served["configmaps"] - 10, After: served["configmaps"]}))
	t.Logf("rehearsal: %s", rj.Status.Message)
	var clusterAfter etcdv1alpha2.EtcdCluster
	var hrAfter helmv2.HelmRelease
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &clusterAfter)).To(Succeed())
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &hrAfter)).To(Succeed())
	g.Expect(clusterAfter.UID).To(Equal(cluster.UID))
	g.Expect(clusterAfter.ResourceVersion).To(Equal(cluster.ResourceVersion))
	g.Expect(hrAfter.ResourceVersion).To(Equal(hr.ResourceVersion))
	g.Expect(hrAfter.Spec.Suspend).To(BeFalse())
	g.Expect(tn.liveRevision()).To(BeNumerically("<", revBefore+1000), "the live revision jumped: something restored")
	_, err := cs.CoreV1().Namespaces().Get(tn.ctx, "shop", metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run brought a namespace back")
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(good), good)).To(Succeed())
	g.Expect(artifact.LastRehearsal(good)).NotTo(BeNil())
	g.Expect(artifact.LastRehearsal(good).Succeeded).To(BeTrue())

	// keepLast 1 would delete "good" now; the hold keeps it.
	g.Consistently(func() error {
		return sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(good), good)
	}).WithTimeout(5 * time.Second).Should(Succeed())
	g.Expect(good.Annotations).To(HaveKeyWithValue(driverv1alpha1.ContentDropHoldAnnotation, dropped.Name))
	g.Expect(good.DeletionTimestamp).To(BeNil())

	// A person says the drop was intended: retention applies again.
	before := good.DeepCopy()
	delete(good.Annotations, driverv1alpha1.ContentDropHoldAnnotation)
	g.Expect(sb.Client.Patch(tn.ctx, good, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func() bool {
		err := sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(good), good)
		return apierrors.IsNotFound(err) || good.DeletionTimestamp != nil
	}).WithTimeout(30*time.Second).Should(BeTrue(), "retention deletes the released Backup")
}

// A snapshot object corrupted after its Backup was inspected fails a fresh
// inspection (its Job deleted, its manifest removed: what a person does to
// have a Backup read again) with a clear reason, and has no manifest; a
// rehearsal of it fails and says why, and the cluster is untouched.
func TestACorruptedObjectFailsInspectionAndRehearsal(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	b := tn.takeBackup("to-corrupt")
	tn.awaitInspected(b)
	tn.overwriteObject(b)
	tn.reinspect(b)
	c := tn.awaitInspected(b)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.BackupReasonInspectionRefused), c.Message)
	g.Expect(c.Message).To(ContainSubstring("sha256"))
	g.Expect(artifact.Manifest(b)).To(BeNil())

	// A rehearsal of it fails too, and says why.
	rj := tn.awaitRestore(tn.restoreJob("rehearse-corrupt", b.Name, map[string]any{"dryRun": true}), 3*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(rj.Status.Message).To(ContainSubstring("sha256"))
	tn.awaitHealthy(1, 10*time.Second)
}

// liveRevision is the tenant etcd's current revision.
func (tn *tenant) liveRevision() int64 {
	tn.t.Helper()
	resp, err := tn.etcd().Get(tn.ctx, "/", clientv3.WithCountOnly())
	tn.g.Expect(err).NotTo(HaveOccurred())
	return resp.Header.Revision
}

func (tn *tenant) takePlanBackup(name, plan string) *backupsv1alpha1.Backup {
	tn.t.Helper()
	j := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class, PlanRef: &backupsv1alpha1.LocalObjectReference{Name: plan},
		},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, j)).To(Succeed())
	j = tn.awaitJob(j, 2*time.Minute)
	tn.g.Expect(j.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), j.Status.Message)
	b := &backupsv1alpha1.Backup{}
	tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: j.Status.BackupRef.Name}, b)).To(Succeed())
	return b
}

// awaitInspected waits for b's Inspected condition to leave
// InspectionPending and returns it.
func (tn *tenant) awaitInspected(b *backupsv1alpha1.Backup) *metav1.Condition {
	tn.t.Helper()
	var c *metav1.Condition
	tn.g.Eventually(func() string {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		c = meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected)
		if c == nil {
			return "none"
		}
		return c.Reason
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).ShouldNot(BeElementOf("none", backupsv1alpha1.BackupReasonInspectionPending))
	return c
}

// awaitManifest waits for b's manifest.
func (tn *tenant) awaitManifest(b *backupsv1alpha1.Backup) *backupsv1alpha1.Backup {
	tn.t.Helper()
	c := tn.awaitInspected(b)
	tn.g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	tn.g.Expect(artifact.Manifest(b)).NotTo(BeNil())
	return b
}

// reinspect deletes b's inspection Job and its manifest (the runbook's
// "inspect again") and waits until the driver has started another.
func (tn *tenant) reinspect(b *backupsv1alpha1.Backup) {
	tn.t.Helper()
	var jobs batchv1.JobList
	tn.g.Expect(sb.Client.List(tn.ctx, &jobs, client.InNamespace(tn.ns),
		client.MatchingLabels{backupsv1alpha1.InspectionLabel: string(b.UID)})).To(Succeed())
	tn.g.Expect(jobs.Items).To(HaveLen(1))
	tn.g.Expect(sb.Client.Delete(tn.ctx, &jobs.Items[0], client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	tn.g.Eventually(func() bool {
		return apierrors.IsNotFound(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(&jobs.Items[0]), &batchv1.Job{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
	before := b.DeepCopy()
	tn.g.Expect(artifact.SetManifest(b, nil)).To(Succeed())
	tn.g.Expect(sb.Client.Patch(tn.ctx, b, client.MergeFrom(before))).To(Succeed())
	tn.g.Eventually(func() string {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		return meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected).Reason
	}).WithTimeout(time.Minute).Should(Equal(backupsv1alpha1.BackupReasonInspectionPending))
}

func keyspace(g Gomega, m *driverv1alpha1.BackupManifest, prefix string) driverv1alpha1.KeyspaceManifest {
	for _, k := range m.Keyspaces {
		if k.Prefix == prefix {
			return k
		}
	}
	g.Expect(m.Keyspaces).To(ContainElement(HaveField("Prefix", prefix)))
	return driverv1alpha1.KeyspaceManifest{}
}

func count(cs []driverv1alpha1.ObjectCount, name string) int64 {
	i := slices.IndexFunc(cs, func(c driverv1alpha1.ObjectCount) bool { return c.Name == name })
	if i < 0 {
		return 0
	}
	return cs[i].Count
}

// servedCounts lists, through the tenant's kube-apiserver, the kinds the
// test compares.
func servedCounts(tn *tenant, cs *kubernetes.Clientset) map[string]int64 {
	cms, err := cs.CoreV1().ConfigMaps("").List(tn.ctx, metav1.ListOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	secrets, err := cs.CoreV1().Secrets("").List(tn.ctx, metav1.ListOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	return map[string]int64{"configmaps": int64(len(cms.Items)), "secrets": int64(len(secrets.Items)),
		"namespaces": int64(len(servedNamespaces(tn, cs)))}
}

func servedNamespaces(tn *tenant, cs *kubernetes.Clientset) []string {
	nss, err := cs.CoreV1().Namespaces().List(tn.ctx, metav1.ListOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, ns := range nss.Items {
		out = append(out, ns.Name)
	}
	return out
}

// deleteNamespace deletes an empty namespace of the tenant cluster and
// finalizes it, as the namespace controller would.
func deleteNamespace(tn *tenant, cs *kubernetes.Clientset, name string) {
	tn.g.Expect(cs.CoreV1().Namespaces().Delete(tn.ctx, name, metav1.DeleteOptions{})).To(Succeed())
	tn.g.Eventually(func() error {
		ns, err := cs.CoreV1().Namespaces().Get(tn.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		ns.Spec.Finalizers = nil
		_, err = cs.CoreV1().Namespaces().Finalize(tn.ctx, ns, metav1.UpdateOptions{})
		if err == nil {
			err = fmt.Errorf("namespace %s is still there", name)
		}
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
