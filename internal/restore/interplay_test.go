package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// A BackupJob created while a restore holds the cluster waits (no
// snapshot of a cluster being replaced), then runs once the restore is done.
func TestBackupJobWaitsDuringRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, &appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testApp}})).To(Succeed())

	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false}`))).To(Succeed())
	waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)

	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "during"},
		Spec:       backupsv1alpha1.BackupJobSpec{ApplicationRef: appRef(), BackupClassName: "default"},
	}
	g.Expect(k.Create(ctx, job)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(jobReason(job)).To(Equal(backupsv1alpha1.BackupReasonRestoreInProgress))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func() int { return snapshotCount(ns) }).WithTimeout(2 * time.Second).Should(BeZero())

	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Eventually(func(g Gomega) {
		g.Expect(k.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded))
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

// runningSnapshot is a BackupJob's EtcdSnapshot the operator is streaming.
func runningSnapshot(ns, name string) *etcdv1alpha2.EtcdSnapshot {
	return &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: clusterName}, Destination: etcdv1alpha2.SnapshotLocation{
			S3: &etcdv1alpha2.S3Destination{Endpoint: testEndpoint, Bucket: testBucket, CredentialsSecretRef: corev1.LocalObjectReference{Name: testSecret}}}},
	}
}

// A BackupJob snapshot already running when the restore takes the claim is
// let finish before the restore touches the cluster.
func TestRestoreWaitsForRunningSnapshot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	running := runningSnapshot(ns, "nightly-abcde")
	g.Expect(k.Create(ctx, running)).To(Succeed())
	running.Status.Phase = etcdv1alpha2.SnapshotPhaseStarted
	g.Expect(k.Status().Update(ctx, running)).To(Succeed())
	// Started before the operator runs: it only takes new snapshots.
	startOperator(t, ns)

	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonWaitingForSnapshots)
	g.Expect(rj.Status.Message).To(ContainSubstring("nightly-abcde"))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())

	running.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
	g.Expect(k.Status().Update(ctx, running)).To(Succeed())
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
}

func jobReason(job *backupsv1alpha1.BackupJob) string {
	for _, c := range job.Status.Conditions {
		if c.Type == backupsv1alpha1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

func snapshotCount(ns string) int {
	var list etcdv1alpha2.EtcdSnapshotList
	if err := k.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return -1
	}
	return len(list.Items)
}

// A claim whose holder is gone (a RestoreJob deleted with its finalizer
// stripped while the driver was not looking) is released by the first
// part of the driver that sees it gone, not at the next sweep minutes
// later: a BackupJob that goes ahead despite it, or the restore controller
// when the RestoreJob's deletion reaches it.
func TestClaimOfAGoneHolderIsReleasedWhenSeen(t *testing.T) {
	ctx := context.Background()
	t.Run("by a BackupJob", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		startOperator(t, ns)
		g.Expect(k.Create(ctx, &appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testApp}})).To(Succeed())
		ghost := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost", UID: types.UID("ghost-" + ns)}}
		_, err := testClaims.Acquire(ctx, ghost, claim.Target{Namespace: ns, Cluster: clusterName}, testApp)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimHolder(g, ns)).NotTo(BeNil())

		job := &backupsv1alpha1.BackupJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "despite"},
			Spec:       backupsv1alpha1.BackupJobSpec{ApplicationRef: appRef(), BackupClassName: "default"},
		}
		g.Expect(k.Create(ctx, job)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded))
		}).WithTimeout(60 * time.Second).Should(Succeed())
		g.Expect(claimHolder(g, ns)).To(BeNil(), "the BackupJob saw the holder gone and left its claim")
	})

	t.Run("by the restore controller", func(t *testing.T) {
		g := NewWithT(t)
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		rj := newRestoreJob(ns, "gone", "no-such-backup", "")
		g.Expect(k.Create(ctx, rj)).To(Succeed())
		_, err := testClaims.Acquire(ctx, rj, claim.Target{Namespace: ns, Cluster: clusterName}, testApp)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claimHolder(g, ns)).NotTo(BeNil())
		g.Expect(k.Delete(ctx, rj)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(claimHolder(g, ns)).To(BeNil())
		}).WithTimeout(15*time.Second).Should(Succeed(), "the claim outlived its RestoreJob")
	})
}
