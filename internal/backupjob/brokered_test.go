package backupjob_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// End to end on a real MinIO with a brokered strategy: the real driver
// gives the tenant its own key, the snapshot agent (reading the Secret the
// EtcdSnapshot names, as the operator's Pods do) stores the snapshot with
// it, the tenant's key cannot delete it, and deleting the Backup (policy
// Delete) removes the object with the platform key. No Secret in the tenant
// namespace holds the platform key.
func TestBrokeredBackupAndDeletionOnMinIO(t *testing.T) {
	w := newWorld(t)
	server, err := testenv.StartMinIO()
	w.g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = server.Stop() })
	root, err := testenv.S3Client(server.Endpoint, server.RootUser, server.RootPassword)
	w.g.Expect(err).NotTo(HaveOccurred())
	// A bucket no other strategy of the suite names: one of them has a
	// templated endpoint and a key that starts with an action, which may
	// write into any tenant's prefix of its bucket on any service (the
	// broker refuses such a tenant, ErrOverlappingScopes).
	const bucket = "brokered-backups"
	w.g.Expect(root.MakeBucket(w.ctx, bucket, minio.MakeBucketOptions{})).To(Succeed())

	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.DriverNamespace, Name: "platform-s3-" + w.strategy},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": server.RootUser, "AWS_SECRET_ACCESS_KEY": server.RootPassword}}
	s3 := w.s3Template()
	s3.Bucket, s3.Endpoint, s3.Region = bucket, server.Endpoint, "us-east-1"
	s3.CredentialsSecretRef.Name = "shared-key-nobody-made"
	policy := w.policyObj()
	policy.Spec.CredentialBroker = &driverv1alpha1.CredentialBroker{
		Provider: driverv1alpha1.CredentialBrokerMinIO, AdminSecretRef: driverv1alpha1.SecretReference{Name: admin.Name},
	}
	w.create(admin, w.strategyObj(s3), policy, w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	op := testenv.StartOperator(t, env.Client, w.ns, nil)
	op.Set(func(op *testenv.Operator) { op.KeyFromSecret = true })

	job := w.job("brokered")
	w.create(job)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 3*time.Minute)
	snap := w.awaitSnapshot(job)
	w.g.Expect(snap.Spec.Destination.S3.CredentialsSecretRef.Name).To(Equal(credbroker.SecretName(w.strategy)))
	key := artifact.ObjectKey(snap.Spec.Destination.S3.Key, snap.Name)
	w.g.Expect(key).To(HavePrefix(w.ns + "/"))
	obj, err := root.GetObject(w.ctx, bucket, key, minio.GetObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(obj)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(data).To(Equal(testenv.Snapshot(4, snap.Name)))

	var tenantSecret corev1.Secret
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: credbroker.SecretName(w.strategy)}, &tenantSecret)).To(Succeed())
	tenant, err := testenv.S3Client(server.Endpoint, string(tenantSecret.Data["AWS_ACCESS_KEY_ID"]), string(tenantSecret.Data["AWS_SECRET_ACCESS_KEY"]))
	w.g.Expect(err).NotTo(HaveOccurred())
	err = tenant.RemoveObject(w.ctx, bucket, key, minio.RemoveObjectOptions{})
	w.g.Expect(minio.ToErrorResponse(err).Code).To(Equal("AccessDenied"), "the tenant key deleted its snapshot")

	var secrets corev1.SecretList
	w.g.Expect(env.Client.List(w.ctx, &secrets, client.InNamespace(w.ns))).To(Succeed())
	w.g.Expect(secrets.Items).NotTo(BeEmpty())
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			w.g.Expect(strings.Contains(string(v), server.RootPassword) || string(v) == server.RootUser).To(BeFalse(),
				"Secret %s key %s holds the platform key", s.Name, k)
		}
	}

	backup := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: job.Name}}
	w.get(backup)
	w.g.Expect(env.Client.Delete(w.ctx, backup)).To(Succeed())
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(backup), &backupsv1alpha1.Backup{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	_, err = root.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	w.g.Expect(minio.ToErrorResponse(err).Code).To(Equal("NoSuchKey"), "the Delete policy left the object")
}

// A brokered strategy whose key renders outside the tenant's prefix fails
// the job before any key is issued or any snapshot is created.
func TestBrokeredKeyOutsideTenantPrefixFails(t *testing.T) {
	w := newWorld(t)
	s3 := w.s3Template()
	s3.Key = "shared/{{ .Application.metadata.name }}/"
	policy := w.policyObj()
	policy.Spec.CredentialBroker = &driverv1alpha1.CredentialBroker{
		Provider: driverv1alpha1.CredentialBrokerMinIO, AdminSecretRef: driverv1alpha1.SecretReference{Name: "absent"},
	}
	w.create(w.strategyObj(s3), policy, w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("outside")
	w.create(job)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonInvalidDestination)
	w.g.Expect(cond.Message).To(ContainSubstring("tenant prefix"))
	err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: credbroker.SecretName(w.strategy)}, &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a key Secret was written for a refused job: %v", err)
}
