package brokered

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/keyscope"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// The demo's flow in brokered mode: the tenant namespace holds no S3
// Secret; the BackupJob's snapshot is stored with the key the driver
// brokered into the namespace, the in-place restore (safety snapshot,
// staging, members' restore) runs with it and brings the data back; that
// key reaches the tenant's prefix and nothing else (MinIO says so), and no
// Secret of the namespace holds the platform key.
func TestBackupAndInPlaceRestoreWithBrokeredKey(t *testing.T) {
	tn := newTenant(t)
	g := tn.g
	tn.deploy(1)
	set := kvdata.Set{Prefix: "/sentinel", N: 2000, Size: 512, Gen: "v1"}
	g.Expect(set.Write(tn.ctx, tn.etcd())).To(Succeed())

	job := tn.backup("first")
	g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), job.Status.Message)
	var b backupsv1alpha1.Backup
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: job.Status.BackupRef.Name}, &b)).To(Succeed())
	src, err := artifact.Resolve(&b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.SecretName).To(Equal(credbroker.SecretName(tn.class)), "the snapshot ran with the brokered Secret")

	changed := kvdata.Set{Prefix: set.Prefix, N: set.N, Size: set.Size, Gen: "v2"}
	g.Expect(changed.Write(tn.ctx, tn.etcd())).To(Succeed())
	rj := tn.restore("back", b.Name)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	tn.awaitHealthy(1)
	g.Expect(set.Check(tn.ctx, tn.etcd())).To(Succeed(), "the backed-up data is back")

	target := keyscope.Target{Endpoint: sb.S3URL, Bucket: sandbox.DefaultBucket, RootCAs: sb.S3CA.Pool,
		Namespace: tn.ns, Secret: credbroker.SecretName(tn.class),
		PlatformKeyID: sb.PlatformCredentials.AccessKeyID, PlatformSecret: sb.PlatformCredentials.SecretAccessKey}
	report, err := keyscope.Check(tn.ctx, sb.Client, target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
	g.Expect(report.AccessKeyID).NotTo(Equal(sb.PlatformCredentials.AccessKeyID))
	g.Expect(report.SecretsChecked).To(BeNumerically(">=", 1))
	g.Expect(report.Probes).To(HaveLen(6), "the key read its own snapshot and was refused its deletion: %+v", report.Probes)

	// The check sees a copy of the platform key, as a shared-key setup has.
	g.Expect(sb.Client.Create(tn.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "shared-s3"},
		StringData: map[string]string{objstore.AccessKeyIDKey: sb.PlatformCredentials.AccessKeyID, objstore.SecretAccessKeyKey: sb.PlatformCredentials.SecretAccessKey}})).To(Succeed())
	report, err = keyscope.Check(tn.ctx, sb.Client, target)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(ContainElement(ContainSubstring("shared-s3")))
}
