package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// A tenant deletes the Backup while its restore has fenced the control
// plane and takes the safety snapshot, before anything is captured. The
// restore ends BackupNotFound and still hands everything back: the
// control plane's fence is lifted to exactly its prior permissions and the
// safety snapshot is recorded as a Backup. (Found by an independent
// review: with neither Backup nor capture the restore saw no control
// plane, left it read-only for good and said the fence was lifted.)
func TestBackupDeletedBeforeTheCaptureStillHandsBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	withControlPlane(t, ns)
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldSnapshots = true })
	b := ourBackup(ns, "nightly", "nightly-gone")
	g.Expect(k.Create(ctx, b)).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())

	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonSafetySnapshotRunning)
	g.Expect(getTCP(g, ns).Annotations).To(HaveKeyWithValue(backupsv1alpha1.FencedByAnnotation, string(rj.UID)))
	g.Expect(k.Delete(ctx, b)).To(Succeed())
	g.Eventually(func() bool {
		err := k.Get(ctx, client.ObjectKeyFromObject(b), &backupsv1alpha1.Backup{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	op.Set(func(op *testenv.Operator) { op.HoldSnapshots = false })

	rj = waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonBackupNotFound)))
	g.Eventually(func(g Gomega) {
		tcp := getTCP(g, ns)
		g.Expect(tcp.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation))
		g.Expect(tcp.Spec.WritePermissions).To(Equal(kamajiv1alpha1.WritePermissions{BlockDelete: true}))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	safety := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: safetyName(rj)}, safety)).To(Succeed())
	g.Expect(safety.Spec.ApplicationRef.Name).To(Equal(applicationName))
}
