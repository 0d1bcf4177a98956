package backupdeletion

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
)

// A restore to a point reads the base it pinned, whatever its
// spec.backupRef names: the base's object is kept until the restore
// ends, as a backupRef's is.
func TestDeletionWaitsForARestoreToAPointFromIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-base", driverv1alpha1.DeletionPolicyDelete)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "newest"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	pin, err := pointintime.EncodePin(ctx, keys, rj, pointintime.Pin{Point: "2026-12-07T05:00:00Z", Backup: f.backup.Name, BackupUID: f.backup.UID,
		Chain: ns + "/etcd/changes/10", Base: changelog.Base{Revision: 10, SHA256: "ab"}})
	g.Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(rj.DeepCopy())
	rj.Annotations = map[string]string{pointintime.PinAnnotation: pin}
	g.Expect(env.Client.Patch(ctx, rj, patch)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	h := newHarness()
	deleteBackup(g, h, f.backup)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeFalse())
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonInUseByRestore))
	g.Expect(backupOfRestore(ctx, rj)).To(HaveLen(2), "the RestoreJob wakes its backupRef and its base")

	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(objectExists(g, f.key)).To(BeFalse())
}
