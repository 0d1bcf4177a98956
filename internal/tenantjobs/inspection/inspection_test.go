package inspection

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/contentdrop"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

func condition(b *backupsv1alpha1.Backup, typ string) string {
	c := meta.FindStatusCondition(b.Status.Conditions, typ)
	if c == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// Each Backup gets a signed manifest from its inspection Job; the first
// one that holds markedly less than the previous good one is marked
// ContentDrop, names what dropped, and holds the previous one from
// retention; the one after it compares with it and is not marked again.
func TestManifestsAreRecordedAndADropHoldsTheLastGoodBackup(t *testing.T) {
	h := newHarness(t)
	g := h.g

	b1 := h.backup("nightly-1", 0)
	h.reconcile(b1)
	g.Expect(condition(b1, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job etcd-inspect-"))
	j1 := h.job(b1)
	g.Expect(j1.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
	g.Expect(j1.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--key=" + h.ns + "/etcd/nightly-1"))
	g.Expect(j1.Name).NotTo(Equal(Name(b1.UID)), "the Job's name must not be one the tenant can derive from the Backup's UID")
	h.finish(j1, inspected(manifest(10, "default", "shop", "billing", "tools")), nil)
	h.reconcile(b1)
	g.Expect(condition(b1, backupsv1alpha1.BackupConditionInspected)).To(Equal("True Inspected: revision 1056, 66 keys, 1048576 bytes; /registry: 56 objects in 4 namespaces"))
	g.Expect(condition(b1, backupsv1alpha1.BackupConditionContentDrop)).To(HavePrefix("False ContentKept: no earlier inspected Backup"))
	g.Expect(provenance.VerifyManifest(h.ctx, keys, b1)).To(BeTrue())
	g.Expect(artifact.Manifest(b1).InspectedAt.IsZero()).To(BeFalse())

	// The tenant set a hold of its own on b1 first (annotations are its to
	// write): the driver's hold replaces it, signed.
	unheld := b1.DeepCopy()
	b1.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "mine"}
	g.Expect(env.Client.Patch(h.ctx, b1, client.MergeFrom(unheld))).To(Succeed())
	g.Expect(contentdrop.HeldByDriver(h.ctx, keys, b1)).To(BeFalse())

	b2 := h.backup("nightly-2", 10)
	h.reconcile(b2)
	h.finish(h.job(b2), inspected(manifest(4, "default", "tools")), nil)
	h.reconcile(b2)
	g.Expect(condition(b2, backupsv1alpha1.BackupConditionContentDrop)).To(Equal(
		"True ContentDropped: since Backup nightly-1: pods in /registry: 40 → 8; namespaces gone from /registry: shop, billing; " +
			"Backup nightly-1 is held from retention until its annotation backups.cozystack.io/held-for-content-drop is removed"))
	g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b1), b1)).To(Succeed())
	g.Expect(b1.Annotations).To(HaveKeyWithValue(driverv1alpha1.ContentDropHoldAnnotation, "nightly-2"))
	g.Expect(contentdrop.HeldByDriver(h.ctx, keys, b1)).To(BeTrue(), "the driver's hold is signed")
	g.Expect(strings.Join(testenv.Drain(h.rec.Events), "\n")).To(ContainSubstring("Warning ContentDropped since Backup nightly-1: pods in /registry: 40 → 8"))

	b3 := h.backup("nightly-3", 20)
	h.reconcile(b3)
	h.finish(h.job(b3), inspected(manifest(4, "default", "tools")), nil)
	h.reconcile(b3)
	g.Expect(condition(b3, backupsv1alpha1.BackupConditionContentDrop)).To(Equal("False ContentKept: compared with Backup nightly-2: nothing dropped beyond the strategy's thresholds"))
	g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b2), b2)).To(Succeed())
	g.Expect(b2.Annotations).NotTo(HaveKey(driverv1alpha1.ContentDropHoldAnnotation))
}

// A Backup whose inspection was refused has no manifest and is never the
// good Backup a later one is compared with.
func TestARefusedInspectionIsNeverTheGoodBackup(t *testing.T) {
	h := newHarness(t)
	g := h.g
	b1 := h.backup("nightly-1", 0)
	h.reconcile(b1)
	h.finish(h.job(b1), inspected(manifest(10, "default", "shop")), nil)
	h.reconcile(b1)

	bad := h.backup("nightly-2", 10)
	h.reconcile(bad)
	h.finish(h.job(bad), step.NewReport(driverv1alpha1.BackupManifest{},
		fmt.Errorf("check the object: %w", s3object.ErrChecksumMismatch)), nil)
	h.reconcile(bad)
	g.Expect(artifact.Manifest(bad)).To(BeNil())
	g.Expect(condition(bad, backupsv1alpha1.BackupConditionInspected)).To(MatchRegexp(
		`^False InspectionRefused: the inspection Job etcd-inspect-\w+ failed: ArtifactChanged: .*this Backup does not count as a good one`))

	b3 := h.backup("nightly-3", 20)
	h.reconcile(b3)
	h.finish(h.job(b3), inspected(manifest(10, "default")), nil)
	h.reconcile(b3)
	g.Expect(condition(b3, backupsv1alpha1.BackupConditionContentDrop)).To(HavePrefix("True ContentDropped: since Backup nightly-1: "))
}

// A tenant that deletes the inspection Job and puts a look-alike at its
// name (the driver's exact labels and owner reference, another object's
// key in its arguments) and a Pod whose report it wrote gets no manifest;
// nor does a Pod of the genuine Job that runs other arguments.
func TestALookAlikeJobOrPodIsNotRead(t *testing.T) {
	h := newHarness(t)
	g := h.g
	b := h.backup("nightly-1", 0)
	h.reconcile(b)
	real := h.job(b)
	g.Expect(env.Client.Delete(h.ctx, real, client.PropagationPolicy("Background"))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKeyFromObject(real), &batchv1.Job{}))
	}).Should(BeTrue())
	fake := &batchv1.Job{ObjectMeta: *real.ObjectMeta.DeepCopy(), Spec: *real.Spec.DeepCopy()}
	fake.ResourceVersion, fake.UID = "", ""
	fake.Spec.Selector, fake.Spec.Template.Labels = nil, map[string]string{backupsv1alpha1.InspectionLabel: string(b.UID)}
	args := fake.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if strings.HasPrefix(a, "--key=") {
			args[i] = "--key=" + h.ns + "/etcd/a-much-smaller-snapshot"
		}
	}
	g.Expect(env.Client.Create(h.ctx, fake)).To(Succeed())
	h.finish(fake, inspected(manifest(100, "default", "shop", "billing")), nil)
	h.reconcile(b)
	g.Expect(artifact.Manifest(b)).To(BeNil())
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(ContainSubstring("is not the inspection Job the driver builds for this Backup"))

	// The genuine Job again (the tenant deleted its own), whose Pod runs
	// other arguments.
	g.Expect(env.Client.Delete(h.ctx, fake, client.PropagationPolicy("Background"))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKeyFromObject(fake), &batchv1.Job{}))
	}).Should(BeTrue())
	h.reconcile(b)
	j := h.job(b)
	other := j.Spec.Template.Spec.DeepCopy().Containers
	other[0].Args = append(other[0].Args, "--extra")
	h.finish(j, inspected(manifest(100, "default", "shop", "billing")), other)
	h.reconcile(b)
	g.Expect(artifact.Manifest(b)).To(BeNil())
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(ContainSubstring("has no Pod with a report"))
}

// A manifest edited on the Backup (or copied from another) does not
// verify; the driver reads its Job's report again and writes back what it
// signed.
func TestAnEditedManifestIsReplacedByTheSignedOne(t *testing.T) {
	h := newHarness(t)
	g := h.g
	b := h.backup("nightly-1", 0)
	h.reconcile(b)
	h.finish(h.job(b), inspected(manifest(10, "default", "shop")), nil)
	h.reconcile(b)
	before := b.DeepCopy()
	m := artifact.Manifest(b)
	m.Keyspaces[0].Resources[0].Count = 9999
	g.Expect(artifact.SetManifest(b, m)).To(Succeed())
	g.Expect(env.Client.Patch(h.ctx, b, client.MergeFrom(before))).To(Succeed())
	h.reconcile(b)
	g.Expect(artifact.Manifest(b).Keyspaces[0].Resources[0].Count).To(Equal(int64(20)))
	g.Expect(provenance.VerifyManifest(h.ctx, keys, b)).To(BeTrue())
}

// A Backup the driver did not sign is not inspected: no Job is made.
func TestAnUnverifiedBackupIsNotInspected(t *testing.T) {
	h := newHarness(t)
	g := h.g
	b := h.backup("forged", 0)
	before := b.DeepCopy()
	b.Status.Artifact.SizeBytes++
	g.Expect(env.Client.Patch(h.ctx, b, client.MergeFrom(before))).To(Succeed())
	h.reconcile(b)
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionRefused: the Backup is not verified (Altered)"))
	var jobs batchv1.JobList
	g.Expect(env.Client.List(h.ctx, &jobs, client.InNamespace(h.ns))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
}

// Inspections wait for a slot: an upgrade finds every existing Backup
// uninspected, and they must not all download their snapshots at once.
func TestInspectionsWaitForASlot(t *testing.T) {
	h := newHarness(t)
	g := h.g
	// Other tests' Jobs count too: take as many slots as run now, plus one.
	running, _, err := h.r.running(h.ctx, h.ns)
	g.Expect(err).NotTo(HaveOccurred())
	h.r.MaxJobs = running + 1
	b1, b2 := h.backup("first", 0), h.backup("second", 10)
	h.reconcile(b1)
	j1 := h.job(b1)
	res, err := h.r.Reconcile(h.ctx, reconcileRequest(b2))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b2), b2)).To(Succeed())
	g.Expect(condition(b2, backupsv1alpha1.BackupConditionInspected)).To(ContainSubstring("waiting for a slot"))
	name, _ := h.r.jobName(h.ctx, b2)
	g.Expect(apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &batchv1.Job{}))).To(BeTrue())

	h.finish(j1, inspected(manifest(1, "default")), nil)
	h.reconcile(b2)
	g.Expect(condition(b2, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job "))
	h.job(b2)
}
