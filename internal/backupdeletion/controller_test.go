package backupdeletion

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

func TestDeletePolicyRemovesTheObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-delete", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	before := deleted("Delete", objectDeleted)
	g.Expect(objectExists(g, f.key)).To(BeTrue())

	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())

	g.Expect(objectExists(g, f.key)).To(BeFalse())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(deleted("Delete", objectDeleted) - before).To(Equal(1.0))
	g.Expect(h.events()).To(ContainSubstring("ObjectDeleted"))

	// An object already gone is not an error.
	f2 := newFixture(g, ns, "b-delete-again", driverv1alpha1.DeletionPolicyDelete)
	g.Expect(s3.RemoveObject(context.Background(), bucket, f2.key, minio.RemoveObjectOptions{})).To(Succeed())
	deleteBackup(g, h, f2.backup)
	g.Expect(h.reconcile(f2.backup)).To(Succeed())
	g.Expect(gone(g, f2.backup)).To(BeTrue())
}

func TestRetainPolicyKeepsTheObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	// No Secret at all: Retain never needs one.
	f := newFixture(g, ns, "b-retain", driverv1alpha1.DeletionPolicyRetain)
	h := newHarness()
	before := deleted("Retain", objectRetained)

	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())

	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(deleted("Retain", objectRetained) - before).To(Equal(1.0))
}

// A Secret that lacks the S3 keys is reported and retried: someone can fix
// it, and the retry then finishes the job.
func TestUnusableSecretIsReportedAndRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
		Data: map[string][]byte{"unrelated": []byte("x")}})).To(Succeed())
	f := newFixture(g, ns, "b-nokeys", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	deleteBackup(g, h, f.backup)

	err := h.reconcile(f.backup)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "an unusable Secret is retried with backoff")
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonCredentialsUnavailable))

	var b backupsv1alpha1.Backup
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), &b)).To(Succeed())
	cond := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonCredentialsUnavailable))
	g.Expect(cond.Message).To(ContainSubstring("s3-creds"))
	g.Expect(b.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer))
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeFalse(), "nothing is removed before the object is")

	// Once the Secret holds the keys, the retry finishes the job.
	g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"}})).To(Succeed())
	createSecret(g, ns)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(objectExists(g, f.key)).To(BeFalse())
	g.Expect(gone(g, f.backup)).To(BeTrue())
}

// A credentials Secret that does not exist does not hold the Backup (nor a
// namespace being deleted, which removes Secrets first or alongside): the
// Backup is released, the object kept, and the Event and metric say so.
func TestMissingSecretReleasesTheBackupKeepingTheObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-nosecret", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	before := deleted("Delete", objectKeptCredentialsGone)
	deleteBackup(g, h, f.backup)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue(), "the Backup is held for a Secret that does not exist")
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectKeptCredentialsGone))
	g.Expect(deleted("Delete", objectKeptCredentialsGone) - before).To(Equal(1.0))
}

// In a namespace being deleted, an object that cannot be deleted at once
// (here: its bucket is gone) does not hold the Backup, and so the
// namespace: the Backup is released and the object kept.
func TestTerminatingNamespaceIsNotHeld(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-terminating", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Status.UnderlyingResources = nil
	f.backup.Status.Artifact = nil
	f.backup.Spec.DriverMetadata[artifact.MetaBucket] = "no-such-bucket"
	seal(g, f.backup)
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	before := deleted("Delete", objectKeptNamespaceTerminating)
	deleteBackup(g, h, f.backup)
	g.Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	// The Secret may or may not be gone yet; either way the Backup goes.
	g.Eventually(func() bool {
		_ = h.reconcile(f.backup)
		return gone(g, f.backup)
	}).WithTimeout(10*time.Second).Should(BeTrue(), "a namespace being deleted is held by the Backup's finalizer")
	events := h.events()
	g.Expect(events).To(Or(ContainSubstring(backupsv1alpha1.BackupReasonObjectKeptNamespaceTerminating),
		ContainSubstring(backupsv1alpha1.BackupReasonObjectKeptCredentialsGone)))
	if strings.Contains(events, backupsv1alpha1.BackupReasonObjectKeptNamespaceTerminating) {
		g.Expect(deleted("Delete", objectKeptNamespaceTerminating) - before).To(Equal(1.0))
	}
}

// A tenant who changes a Backup's strategyRef (unsigned) after the driver
// put its finalizer on does not strand it: the driver still cleans up and
// releases the Backup.
func TestEditedStrategyRefDoesNotStrandTheFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-restrategied", driverv1alpha1.DeletionPolicyRetain)
	h := newHarness()
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Spec.StrategyRef = backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("velero.io"), Kind: "Velero", Name: "v"}
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, f.backup)).To(Succeed())

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue(), "the driver's finalizer was stranded")
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
}

func TestS3ErrorIsReportedAndRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-nobucket", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	// Point the Backup at a bucket the server does not have.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Status.UnderlyingResources = nil
	f.backup.Status.Artifact = nil
	f.backup.Spec.DriverMetadata[artifact.MetaBucket] = "no-such-bucket"
	seal(g, f.backup) // as the driver would have recorded it
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	deleteBackup(g, h, f.backup)

	err := h.reconcile(f.backup)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(gone(g, f.backup)).To(BeFalse())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(cond.Message).NotTo(ContainSubstring("SECRET"))
}

// With the skip annotation a verified Backup goes and its object stays.
func TestSkipAnnotationKeepsTheObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-skip", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Annotations = map[string]string{SkipObjectDeletionAnnotation: "true"}
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	deleteBackup(g, h, f.backup)
	before := deleted("Delete", objectSkipped)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(deleted("Delete", objectSkipped) - before).To(Equal(1.0))
}

// An endpoint the policy refuses is never dialled: the cleanup stops with a
// terminal error and a Warning, the object and the Backup stay.
func TestRefusedEndpointIsNeverDialled(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-refused", driverv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	h.r.Policy = endpointpolicy.Policy{} // loopback denied
	deleteBackup(g, h, f.backup)
	err := h.reconcile(f.backup)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", err)
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeFalse())
}

// A Backup the driver cannot verify — edited to point elsewhere, written by
// hand, or not saying where its object is — goes without deleting any
// object, with a Warning saying why; its Verified condition shows it first.
func TestUnverifiedBackupsNeverDeleteObjects(t *testing.T) {
	ctx := context.Background()
	for name, edit := range map[string]func(b *backupsv1alpha1.Backup){
		"edited key": func(b *backupsv1alpha1.Backup) {
			b.Status.Artifact.URI = artifact.URI(bucket, "victim/etcd/theirs.db")
		},
		"signature removed": func(b *backupsv1alpha1.Backup) { delete(b.Spec.DriverMetadata, artifact.MetaProvenance) },
		"unresolvable": func(b *backupsv1alpha1.Backup) {
			b.Status.UnderlyingResources = nil
			delete(b.Spec.DriverMetadata, artifact.MetaBucket)
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(g)
			createSecret(g, ns)
			f := newFixture(g, ns, "b-forged", driverv1alpha1.DeletionPolicyDelete)
			h := newHarness()
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
			edit(f.backup)
			g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
			g.Expect(h.reconcile(f.backup)).To(Succeed())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
			cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonUnverified))

			before := deleted("Delete", objectKeptUnverified)
			g.Expect(env.Client.Delete(ctx, f.backup)).To(Succeed())
			g.Expect(h.reconcile(f.backup)).To(Succeed())
			g.Expect(gone(g, f.backup)).To(BeTrue())
			g.Expect(objectExists(g, f.key)).To(BeTrue())
			g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectKeptUnverified))
			g.Expect(deleted("Delete", objectKeptUnverified) - before).To(Equal(1.0))
		})
	}
}

// A verified Backup shows so.
func TestVerifiedConditionOnLiveBackups(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-verified", driverv1alpha1.DeletionPolicyRetain)
	g.Expect(newHarness().reconcile(f.backup)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	// Written once: a patch of a Backup (no status subresource) moves its
	// generation, which must not call for another write.
	rv := f.backup.ResourceVersion
	for range 3 {
		g.Expect(newHarness().reconcile(f.backup)).To(Succeed())
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	g.Expect(f.backup.ResourceVersion).To(Equal(rv), "the driver rewrote an unchanged condition")
}

// Only Etcd Backups get the finalizer; a snapshot owned by another Backup
// is never deleted.
func TestScopeAndForeignSnapshots(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	h := newHarness()

	velero := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "velero"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(strategyv1alpha1.GroupVersion.Group), Kind: "Velero", Name: "v"},
			TakenAt:        metav1.Now(),
		},
	}
	g.Expect(env.Client.Create(ctx, velero)).To(Succeed())
	g.Expect(h.reconcile(velero)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(velero), velero)).To(Succeed())
	g.Expect(velero.Finalizers).To(BeEmpty())

	f := newFixture(g, ns, "b-foreign", driverv1alpha1.DeletionPolicyRetain)
	f.snapshot.OwnerReferences[0].UID = "someone-else"
	g.Expect(env.Client.Update(ctx, f.snapshot)).To(Succeed())
	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeFalse())
}

// The object of a Backup an unfinished RestoreJob reads is kept until the
// restore ends; then the deletion completes.
func TestDeletionWaitsForARunningRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-restoring", driverv1alpha1.DeletionPolicyDelete)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: f.backup.Name}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	h := newHarness()
	deleteBackup(g, h, f.backup)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeFalse())
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonInUseByRestore))
	g.Expect(backupOfRestore(ctx, rj)).To(HaveLen(1))

	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(objectExists(g, f.key)).To(BeFalse())
}

// A tenant writes a Backup naming (by name and UID) an EtcdSnapshot that is
// not its own — a RestoreJob's safety snapshot, made with the driver's exact
// name and labels and owned by the RestoreJob — and deletes the Backup. The
// snapshot is kept: a Backup deletes only a snapshot it owns.
func TestForgedBackupCannotDeleteAnotherOwnersSnapshot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "nightly"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	victim := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-safety-0a1b2c3d",
			Labels: map[string]string{
				backupsv1alpha1.SafetyBackupLabel:    rj.Name,
				backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
				backupsv1alpha1.ApplicationNameLabel: "etcd",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob",
				Name: rj.Name, UID: rj.UID, Controller: ptr.To(true)}}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1.LocalObjectReference{Name: "etcd"},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint: s3URL, Bucket: bucket, Key: ns + "/etcd/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}},
		},
	}
	g.Expect(env.Client.Create(ctx, victim)).To(Succeed())
	forged := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Finalizers: []string{LegacyFinalizer}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.Now(),
			DriverMetadata: map[string]string{
				artifact.MetaSnapshotName: victim.Name, artifact.MetaSnapshotUID: string(victim.UID),
				artifact.MetaBucket: bucket, artifact.MetaEndpoint: s3URL, artifact.MetaKey: ns + "/etcd/",
				artifact.MetaCredentialsName: "s3-creds",
			},
		},
	}
	g.Expect(env.Client.Create(ctx, forged)).To(Succeed())
	h := newHarness()
	deleteBackup(g, h, forged)
	g.Expect(h.reconcile(forged)).To(Succeed())
	g.Expect(gone(g, forged)).To(BeTrue())
	g.Expect(gone(g, victim)).To(BeFalse(), "a forged Backup deleted a RestoreJob's safety snapshot")
}

// The Verified condition is written from the copy the reconciler read; the
// inspection writes the Inspected condition on the same list meanwhile. A
// write from a stale copy must not drop it (a merge patch replaces the
// whole list): it is refused and retried from a fresh read.
func TestAStaleCopyDoesNotDropAnotherControllersCondition(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-conditions", driverv1alpha1.DeletionPolicyRetain)
	stale := f.backup.DeepCopy()

	fresh := f.backup.DeepCopy()
	base := fresh.DeepCopy()
	meta.SetStatusCondition(&fresh.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionInspected,
		Status: metav1.ConditionTrue, Reason: backupsv1alpha1.BackupReasonInspected, Message: "revision 10"})
	g.Expect(env.Client.Patch(ctx, fresh, client.MergeFrom(base))).To(Succeed())

	h := newHarness()
	g.Expect(h.r.setCondition(ctx, stale, backupsv1alpha1.BackupConditionVerified, false, backupsv1alpha1.BackupReasonUnverified, "test")).
		To(MatchError(apierrors.IsConflict, "a conflict"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), fresh)).To(Succeed())
	g.Expect(meta.FindStatusCondition(fresh.Status.Conditions, backupsv1alpha1.BackupConditionInspected)).NotTo(BeNil())
}
