package brokered

import (
	"bytes"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// Rotation in the middle of a snapshot does not fail it: the agent starts
// with the tenant's key, the key rotates (a sweep a rotation interval
// later), the agent stores the snapshot with the key it started with, and
// the BackupJob succeeds; the next backup runs with the new key.
func TestRotationDuringSnapshot(t *testing.T) {
	tn := plat.NewTenant(t, "rotating")
	tn.Op.Set(func(op *testenv.Operator) { op.HoldSnapshots = true })
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "during"},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: platform.ClassName},
	}
	tn.Create(job)
	var snap etcdv1alpha2.EtcdSnapshot
	tn.G.Eventually(func(g Gomega) {
		var list etcdv1alpha2.EtcdSnapshotList
		g.Expect(env.Client.List(tn.Ctx, &list, client.InNamespace(tn.NS))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		snap = list.Items[0]
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The agent's Pod starts: it reads the two variables once.
	agent := tenantS3(tn)
	snap.Status.Phase = etcdv1alpha2.SnapshotPhaseStarted
	tn.G.Expect(env.Client.Status().Update(tn.Ctx, &snap)).To(Succeed())
	before := secretKeyID(tn)

	// A rotation interval later, the sweep replaces the key.
	s, err := strategypolicy.Get(tn.Ctx, env.Client, strategy)
	tn.G.Expect(err).NotTo(HaveOccurred())
	rotator := &credbroker.Broker{Client: env.Client, Reader: env.Client, Namespace: testenv.DriverNamespace,
		Clock: clocktesting.NewFakePassiveClock(time.Now().Add(credbroker.DefaultRotationInterval + time.Hour)), Grace: time.Hour,
		Providers: map[driverv1alpha1.CredentialBrokerProvider]credbroker.NewProvider{driverv1alpha1.CredentialBrokerMinIO: brokerminio.Connect(server.HTTPClient())}}
	_, err = rotator.Sweep(tn.Ctx, s)
	tn.G.Expect(err).NotTo(HaveOccurred())
	tn.G.Expect(secretKeyID(tn)).NotTo(Equal(before), "the key did not rotate")

	// The agent finishes with the key it started with.
	dest := snap.Spec.Destination.S3
	key := artifact.ObjectKey(dest.Key, snap.Name)
	data := testenv.Snapshot(4, snap.Name)
	_, err = agent.PutObject(tn.Ctx, dest.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	tn.G.Expect(err).NotTo(HaveOccurred(), "rotation broke the snapshot in flight")
	tn.G.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(&snap), &snap)).To(Succeed())
	snap.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
	snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: artifact.URI(dest.Bucket, key), SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}
	meta.SetStatusCondition(&snap.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "SnapshotStored", Message: "stored"})
	tn.G.Expect(env.Client.Status().Update(tn.Ctx, &snap)).To(Succeed())
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), "status: %+v", job.Status)
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The next snapshot runs with the new key.
	tn.Op.Set(func(op *testenv.Operator) { op.HoldSnapshots = false })
	tn.Backup("after", "")
}

func secretKeyID(tn *platform.Tenant) string {
	creds := tenantS3(tn)
	id, err := creds.GetCreds()
	tn.G.Expect(err).NotTo(HaveOccurred())
	return id.AccessKeyID
}
