package brokered

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

const strategy = "cozy-default-etcd"

func tenantS3(tn *platform.Tenant) *minio.Client {
	var s corev1.Secret
	tn.G.Expect(env.Client.Get(tn.Ctx, client.ObjectKey{Namespace: tn.NS, Name: credbroker.SecretName(strategy)}, &s)).To(Succeed())
	c, err := server.Client(string(s.Data["AWS_ACCESS_KEY_ID"]), string(s.Data["AWS_SECRET_ACCESS_KEY"]))
	tn.G.Expect(err).NotTo(HaveOccurred())
	return c
}

func noPlatformKey(tn *platform.Tenant) {
	var secrets corev1.SecretList
	tn.G.Expect(env.Client.List(tn.Ctx, &secrets, client.InNamespace(tn.NS))).To(Succeed())
	tn.G.Expect(secrets.Items).NotTo(BeEmpty())
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			for _, platform := range [][2]string{{server.RootUser, server.RootPassword}, {plat.Creds.AccessKeyID, plat.Creds.SecretAccessKey}} {
				tn.G.Expect(strings.Contains(string(v), platform[1]) || string(v) == platform[0]).To(BeFalse(),
					"Secret %s/%s key %s holds the platform key", tn.NS, s.Name, k)
			}
		}
	}
}

// Two tenants back up with their own keys; each key is refused on the
// other's snapshot; a tenant restores in place from its Backup; deleting a
// Backup (policy Delete) removes its object with the platform key, which
// the tenant's own key may not do.
func TestBackupRestoreAndDeletionWithBrokeredKeys(t *testing.T) {
	a, b := plat.NewTenant(t, "alpha"), plat.NewTenant(t, "beta")
	backupA := a.Backup("a1", "")
	backupB := b.Backup("b1", "")
	keyA, keyB := platform.KeyOf(a.G, backupA), platform.KeyOf(b.G, backupB)
	src, err := artifact.Resolve(backupA)
	a.G.Expect(err).NotTo(HaveOccurred())
	a.G.Expect(src.SecretName).To(Equal(credbroker.SecretName(strategy)), "the Backup records the brokered Secret")

	s3A, s3B := tenantS3(a), tenantS3(b)
	obj, err := s3A.GetObject(a.Ctx, platform.Bucket, keyA, minio.GetObjectOptions{})
	a.G.Expect(err).NotTo(HaveOccurred())
	_, err = io.ReadAll(obj)
	a.G.Expect(err).NotTo(HaveOccurred(), "the tenant's key cannot read its own snapshot")
	for i, attempt := range []error{
		func() error {
			o, err := s3A.GetObject(a.Ctx, platform.Bucket, keyB, minio.GetObjectOptions{})
			if err == nil {
				_, err = io.ReadAll(o)
			}
			return err
		}(),
		s3B.RemoveObject(b.Ctx, platform.Bucket, keyA, minio.RemoveObjectOptions{}),
		s3A.RemoveObject(a.Ctx, platform.Bucket, keyA, minio.RemoveObjectOptions{}),
	} {
		a.G.Expect(minio.ToErrorResponse(attempt).Code).To(Equal("AccessDenied"),
			"attempt %d (read the other's, delete the other's, delete its own): %v", i, attempt)
	}
	a.G.Expect(plat.ObjectExists(keyA)).To(BeTrue())

	rj := a.Restore("r1", backupA.Name, "")
	a.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "restore: %+v", rj.Status)
	noPlatformKey(a)
	noPlatformKey(b)

	a.G.Expect(env.Client.Delete(a.Ctx, backupA)).To(Succeed())
	a.G.Eventually(func() bool { return a.Gone(backupA) }).WithTimeout(30 * time.Second).Should(BeTrue())
	a.G.Expect(plat.ObjectExists(keyA)).To(BeFalse(), "the Delete policy left the object")
	a.G.Expect(plat.ObjectExists(keyB)).To(BeTrue(), "another tenant's object went")
}
