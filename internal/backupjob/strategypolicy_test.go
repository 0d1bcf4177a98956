package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
)

// A strategy without a StrategyPolicy gets every default: its https
// destination is used, and its Backups are recorded Retain.
func TestWithoutAStrategyPolicyBackupsAreRetained(t *testing.T) {
	w := newWorld(t)
	s3 := w.s3Template()
	s3.Endpoint = "https://127.0.0.1:9000"
	w.create(w.strategyObj(s3), w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("defaults")
	w.create(job)
	w.operatorFinishes(w.awaitSnapshot(job), etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	backup := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: job.Name}}
	w.get(backup)
	w.g.Expect(artifact.RecordedOf(backup).DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyRetain))
}

// A brokered StrategyPolicy over a strategy whose bucket is a template
// (the strategy's CEL refused that before the broker left Cozystack's
// kind; the rule now spans two objects) fails the job, naming the
// StrategyPolicy, before any key is issued or snapshot created.
func TestBrokeredTemplatedBucketFailsNamingThePolicy(t *testing.T) {
	w := newWorld(t)
	s3 := w.s3Template()
	s3.Bucket = "{{ .Parameters.region }}-backups"
	policy := w.policyObj()
	policy.Spec.CredentialBroker = &driverv1alpha1.CredentialBroker{
		Provider: driverv1alpha1.CredentialBrokerMinIO, AdminSecretRef: driverv1alpha1.SecretReference{Name: "absent"},
	}
	w.create(w.strategyObj(s3), policy, w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("templated")
	w.create(job)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonInvalidStrategyPolicy)
	w.g.Expect(cond.Message).To(And(ContainSubstring(`StrategyPolicy "`+w.strategy+`"`), ContainSubstring("spec.template.destination.s3.bucket")))
	w.g.Expect(w.snapshotsOf(job)).To(BeEmpty())
	err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: credbroker.SecretName(w.strategy)}, &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a key Secret was written for a refused job: %v", err)
}
