package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// The operator reports when the snapshot completed; a wrong clock there (or
// an edited status) would make the signed takenAt, which orders retention,
// say the Backup is newer than any other. It is clamped to the driver's
// clock and to the snapshot's creation.
func TestOperatorTimeIsClampedToTheDriversClock(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	for name, at := range map[string]time.Time{
		"future": time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
		"past":   time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		job := w.job("clock-" + name)
		w.create(job)
		snap := w.awaitSnapshot(job)
		// The operator's write, in one status update, with its clock's time.
		w.get(snap)
		snap.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
		snap.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "SnapshotStored",
			Message: "stored", LastTransitionTime: metav1.NewTime(at)}}
		snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://etcd-backups/" + w.ns + "/etcd/" + snap.Name + ".db", SizeBytes: 1}
		w.g.Expect(env.Client.Status().Update(w.ctx, snap)).To(Succeed())
		w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)

		b := &backupsv1alpha1.Backup{}
		b.Namespace, b.Name = w.ns, job.Status.BackupRef.Name
		w.get(b)
		w.g.Expect(b.Spec.TakenAt.Time).To(BeTemporally("<=", time.Now()), name)
		w.g.Expect(b.Spec.TakenAt.Time).To(BeTemporally(">=", snap.CreationTimestamp.Time), name)
	}
}
