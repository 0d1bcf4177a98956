package backupjob_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

func TestHappyPath(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("nightly")
	w.create(job)

	snap := w.awaitSnapshot(job)
	// A job that went straight to its snapshot writes its status once, at
	// its end: the running snapshot is its progress, held for its Backup.
	w.g.Consistently(func() backupsv1alpha1.BackupJobStatus {
		w.get(job)
		return job.Status
	}).WithTimeout(time.Second).Should(BeZero())
	w.g.Expect(snap.Finalizers).To(ConsistOf(backupsv1alpha1.SnapshotRecordFinalizer))
	w.g.Expect(job.Finalizers).To(BeEmpty())
	w.g.Expect(snap.Spec.ClusterRef.Name).To(Equal("etcd"))
	s3 := snap.Spec.Destination.S3
	w.g.Expect(s3.Key).To(Equal(w.ns+"/etcd/"), "the key template saw the application")
	w.g.Expect(s3.Region).To(Equal("eu-west-1"), "the region template saw the parameters")
	w.g.Expect(s3.ForcePathStyle).To(BeTrue())
	w.g.Expect(len(snap.Name) + len("-snapshot")).To(BeNumerically("<=", 63))
	w.g.Expect(snap.Labels).To(HaveKeyWithValue(backupsv1alpha1.OwningJobNameLabel, job.Name))
	w.g.Expect(snap.Labels).To(HaveKeyWithValue(backupsv1alpha1.OwningJobNamespaceLabel, w.ns))
	w.g.Expect(snap.OwnerReferences).To(ConsistOf(HaveField("UID", job.UID)))

	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	w.g.Expect(job.Status.BackupRef.Name).To(Equal(job.Name))
	w.g.Expect(job.Status.CompletedAt).NotTo(BeNil())
	w.g.Expect(job.Status.StartedAt).NotTo(BeNil())
	w.g.Expect(job.Status.StartedAt.Time).To(BeTemporally("==", snap.CreationTimestamp.Time), "it started with its snapshot")

	backup := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: job.Name}}
	w.get(backup)
	w.get(snap)
	ready := snap.Status.Conditions[0]
	w.g.Expect(backup.Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
	w.g.Expect(backup.Status.Artifact.URI).To(Equal(snap.Status.Artifact.URI))
	w.g.Expect(backup.Status.Artifact.SizeBytes).To(Equal(int64(12345)))
	w.g.Expect(backup.Status.Artifact.Checksum).To(HavePrefix("sha256:"))
	w.g.Expect(backup.Spec.TakenAt.Time).To(BeTemporally("==", ready.LastTransitionTime.Time), "takenAt is when the snapshot completed")
	w.g.Expect(*backup.Spec.StrategyRef.APIGroup).To(Equal("strategy.backups.cozystack.io"))
	w.g.Expect(backup.Spec.StrategyRef.Name).To(Equal(w.strategy))
	w.g.Expect(backup.Labels).To(HaveKeyWithValue(backupsv1alpha1.ApplicationNameLabel, "etcd"))
	w.g.Expect(backup.OwnerReferences).To(BeEmpty(), "deleting the BackupJob must not delete its Backup")
	w.g.Expect(backup.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer), "cleanup is guaranteed from the first moment")
	meta := backup.Spec.DriverMetadata
	w.g.Expect(meta).To(HaveKeyWithValue(artifact.MetaSnapshotName, snap.Name))
	w.g.Expect(meta).To(HaveKeyWithValue(artifact.MetaBucket, "etcd-backups"))
	w.g.Expect(meta).To(HaveKeyWithValue(artifact.MetaCredentialsName, "s3-creds"))
	w.g.Expect(meta).To(HaveKeyWithValue(artifact.MetaDeletionPolicy, "Delete"))
	w.g.Expect(string(backup.Status.UnderlyingResources.Raw)).To(ContainSubstring(`"kind":"EtcdBackupSnapshot"`))
	w.g.Expect(string(backup.Status.UnderlyingResources.Raw)).To(ContainSubstring(`"region":"eu-west-1"`))

	// The restore side reads back exactly the object the operator wrote.
	src, err := artifact.Resolve(backup)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(artifact.URI(src.Bucket, src.Key)).To(Equal(snap.Status.Artifact.URI))
	w.g.Expect(src.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyDelete))

	// Ownership of the snapshot moved to the Backup, which let go of it
	// in the same write.
	w.g.Expect(snap.OwnerReferences).To(ConsistOf(HaveField("UID", backup.UID)))
	w.g.Expect(snap.Finalizers).To(BeEmpty())
	w.g.Expect(w.snapshotsOf(job)).To(HaveLen(1))

	// A success has no Event: the Ready condition says it.
	ready = *w.awaitReason(job, backupsv1alpha1.BackupReasonBackupCompleted)
	w.g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	w.g.Expect(ready.Message).To(ContainSubstring("Backup " + job.Name + " holds " + snap.Status.Artifact.URI))
	w.g.Consistently(func() []string { return w.eventReasons(job) }, time.Second).Should(BeEmpty())
}

func TestSnapshotFailed(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("fails")
	w.create(job)
	w.operatorFinishes(w.awaitSnapshot(job), etcdv1alpha2.SnapshotPhaseFailed)

	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonSnapshotFailed)
	w.g.Expect(cond.Message).To(ContainSubstring("JobFailed: snapshot job failed: connection refused"))
	w.g.Expect(job.Status.CompletedAt).NotTo(BeNil())
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: job.Name}, &backupsv1alpha1.Backup{})).NotTo(Succeed())
	w.g.Eventually(func() []string { return w.eventReasons(job) }).Should(ContainElement(backupsv1alpha1.BackupReasonSnapshotFailed))
	// Nothing will record the failed snapshot: the job, its owner, keeps
	// it no longer than itself.
	snap := w.snapshotsOf(job)[0]
	w.g.Expect(snap.Finalizers).To(BeEmpty())
	w.g.Expect(snap.OwnerReferences).To(ConsistOf(HaveField("UID", job.UID)))
}

func TestClusterNeverAvailableFailsAtDeadline(t *testing.T) {
	w := newWorld(t)
	w.create(w.strategyObj(w.s3Template()), w.policyObj(), w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(false)
	w.startDriver(func(o *manager.Options) { o.BackupDeadline = 4 * time.Second })
	job := w.job("never")
	w.create(job)

	w.awaitReason(job, backupsv1alpha1.BackupReasonEtcdClusterNotAvailable)
	w.g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhasePending))
	w.g.Expect(job.Status.Message).To(ContainSubstring("Available=False"))
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonDeadlineExceeded)
	w.g.Expect(cond.Message).To(ContainSubstring("gave up after 4s"))
	w.g.Expect(cond.Message).To(ContainSubstring("become Available"))
	w.g.Expect(w.snapshotsOf(job)).To(BeEmpty(), "no snapshot of an unavailable cluster")
}

// The strategy appears after the job: the job proceeds because the driver
// watches strategies. The deadline is long, so a deadline requeue cannot be
// what wakes it.
func TestStrategyCreatedLaterIsPickedUpByWatch(t *testing.T) {
	w := newWorld(t)
	w.create(w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("early")
	w.create(job)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonStrategyNotReady)
	w.g.Expect(cond.Message).To(ContainSubstring(w.strategy))

	// The policy first: a strategy without one is https only.
	w.create(w.policyObj(), w.strategyObj(w.s3Template()))
	start := time.Now()
	w.awaitSnapshot(job)
	w.g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
}

func TestClassWithoutMatchingEntryFails(t *testing.T) {
	w := newWorld(t)
	class := w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd")
	class.Spec.Strategies[0].Application.Kind = "Postgres"
	w.create(w.strategyObj(w.s3Template()), class, w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("nomatch")
	w.create(job)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
	cond := w.awaitReason(job, backupsv1alpha1.BackupReasonNoMatchingStrategy)
	w.g.Expect(cond.Message).To(ContainSubstring("apps.cozystack.io/Etcd"))
}

func TestForeignStrategyJobIsUntouched(t *testing.T) {
	w := newWorld(t)
	w.create(w.classObj("velero.io", "Velero"), w.app())
	w.cluster(true)
	w.startDriver(nil)
	job := w.job("velero")
	w.create(job)
	w.g.Consistently(func() backupsv1alpha1.BackupJob {
		w.get(job)
		return *job
	}).WithTimeout(3 * time.Second).Should(And(
		HaveField("Status", backupsv1alpha1.BackupJobStatus{}),
		HaveField("ObjectMeta.Finalizers", BeEmpty()),
	))
}

func TestTemplateErrorsFailNamingTheField(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*strategyv1alpha1.EtcdS3Template)
		reason string
		want   string
	}{
		"missing key":      {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "{{ .Parameters.bucket }}" }, backupsv1alpha1.BackupReasonTemplateError, "spec.template.destination.s3.bucket"},
		"env":              {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = `{{ env "HOME" }}` }, backupsv1alpha1.BackupReasonTemplateError, "spec.template.destination.s3.endpoint"},
		"unknown function": {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = `{{ nosuch .Parameters }}` }, backupsv1alpha1.BackupReasonTemplateError, "spec.template.destination.s3.key"},
		"bucket name":      {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "Not_A_Bucket" }, backupsv1alpha1.BackupReasonInvalidDestination, "spec.template.destination.s3.bucket"},
		"endpoint scheme":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "s3.example.com:9000" }, backupsv1alpha1.BackupReasonInvalidDestination, "spec.template.destination.s3.endpoint"},
		"key traversal":    {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "../{{ .Application.metadata.name }}" }, backupsv1alpha1.BackupReasonInvalidDestination, "spec.template.destination.s3.key"},
		"key absolute":     {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "/abs/" }, backupsv1alpha1.BackupReasonInvalidDestination, "spec.template.destination.s3.key"},
		"secret name":      {func(s *strategyv1alpha1.EtcdS3Template) { s.CredentialsSecretRef.Name = "Bad Name" }, backupsv1alpha1.BackupReasonInvalidDestination, "credentialsSecretRef.name"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			s3 := w.s3Template()
			tc.mutate(&s3)
			w.create(w.strategyObj(s3), w.policyObj(), w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
			w.cluster(true)
			w.startDriver(nil)
			job := w.job("tmpl")
			w.create(job)
			w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
			cond := w.awaitReason(job, tc.reason)
			w.g.Expect(cond.Message).To(ContainSubstring(tc.want))
			w.g.Expect(w.snapshotsOf(job)).To(BeEmpty())
			w.g.Eventually(func() []string { return w.eventReasons(job) }).Should(ContainElement(tc.reason))
		})
	}
}

func TestLongJobNameFits(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job(strings.Repeat("a", 50) + "-" + strings.Repeat("b", 12))
	w.g.Expect(job.Name).To(HaveLen(63))
	w.create(job)
	snap := w.awaitSnapshot(job)
	w.g.Expect(len(snap.Name + "-snapshot")).To(BeNumerically("<=", 63))
	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
}
