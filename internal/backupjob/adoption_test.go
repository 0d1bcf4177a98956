package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
)

// A tenant pre-creates the Backup a running job will record, with the
// driver's exact name and labels (the job's UID is readable), pointing at
// another tenant's object. The job must not adopt it: adoption needs the
// driver's signature over this snapshot's UID, which no label gives. The
// snapshot stays the job's, never handed to the look-alike.
func TestLookAlikeBackupIsNotAdopted(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("lookalike")
	w.create(job)
	snap := w.awaitSnapshot(job)

	labels := map[string]string{
		backupsv1alpha1.OwningJobNamespaceLabel: job.Namespace,
		backupsv1alpha1.OwningJobUIDLabel:       string(job.UID),
		backupsv1alpha1.ApplicationNameLabel:    "etcd",
		backupsv1alpha1.OwningJobNameLabel:      names.LabelValue(job.Name),
	}
	forged := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: job.Name, Labels: labels},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: job.Spec.ApplicationRef,
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: w.strategy},
			TakenAt:        metav1.Now(),
			DriverMetadata: map[string]string{
				artifact.MetaSnapshotName: snap.Name, artifact.MetaSnapshotUID: string(snap.UID),
				artifact.MetaBucket: "etcd-backups", artifact.MetaEndpoint: "http://127.0.0.1:9000",
				artifact.MetaKey: "victim/etcd/", artifact.MetaCredentialsName: "s3-creds",
				artifact.MetaDeletionPolicy: "Delete", artifact.MetaProvenance: "v2.k1.AAAA",
			},
		},
	}
	w.create(forged)
	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)

	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonBackupConflict)
	w.g.Expect(cond.Message).To(ContainSubstring("was not made by this BackupJob"))
	w.get(job)
	w.g.Expect(job.Status.BackupRef).To(BeNil())
	w.g.Consistently(func() []metav1.OwnerReference {
		w.get(snap)
		return snap.OwnerReferences
	}).WithTimeout(2*time.Second).ShouldNot(ContainElement(HaveField("UID", forged.UID)), "snapshot handed to the look-alike")
}
