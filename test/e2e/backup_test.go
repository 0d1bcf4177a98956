package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
)

// bigSet is ~50 MB of data: 50,000 keys of 1 KiB.
var bigSet = kvdata.Set{Prefix: "/sentinel", N: 50_000, Size: 1024, Gen: "before-backup"}

// The demo flow at size: a BackupJob moves a 50,000-key cluster into S3 (the
// object exists at the operator's key with the size and sha256 the Backup
// records); the data is then changed, and an in-place RestoreJob, while the
// helm-controller stand-in is live, brings back exactly the backed-up keys.
func TestBackupAndInPlaceRestoreOfFiftyThousandKeys(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(3)

	writeStart := time.Now()
	g.Expect(bigSet.Write(tn.ctx, tn.etcd())).To(Succeed())
	t.Logf("wrote %d keys (%d MiB of values) in %s", bigSet.N, bigSet.N*bigSet.Size>>20, time.Since(writeStart).Round(time.Millisecond))

	jobStart := time.Now()
	job := tn.awaitJob(tn.backupJob("full"), 3*time.Minute)
	jobTook := time.Since(jobStart)
	g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), job.Status.Message)
	g.Expect(job.Status.BackupRef).NotTo(BeNil())

	var b backupsv1alpha1.Backup
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: job.Status.BackupRef.Name}, &b)).To(Succeed())
	g.Expect(b.Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
	src, err := artifact.Resolve(&b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.Key).To(Equal(artifact.ObjectKey(tn.ns+"/etcd/", src.SnapshotName)))

	// The stored object is the artifact the Backup describes.
	s3, err := sb.S3Client(sb.S3Credentials.AccessKeyID, sb.S3Credentials.SecretAccessKey)
	g.Expect(err).NotTo(HaveOccurred())
	obj, err := s3.GetObject(tn.ctx, sandbox.DefaultBucket, src.Key, minio.GetObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	h := sha256.New()
	n, err := io.Copy(h, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", int64(bigSet.N*bigSet.Size)), "the snapshot holds every value")
	g.Expect(b.Status.Artifact.SizeBytes).To(Equal(n))
	g.Expect(b.Status.Artifact.Checksum).To(Equal("sha256:" + hex.EncodeToString(h.Sum(nil))))

	var snap etcdv1alpha2.EtcdSnapshot
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: src.SnapshotName}, &snap)).To(Succeed())
	stats, ok := sb.Snapshots.Stats(string(snap.UID))
	g.Expect(ok).To(BeTrue())
	mb := float64(stats.Bytes) / 1e6
	t.Logf("TIMING snapshot: %.1f MB in %s = %.1f MB/s; BackupJob end to end %s; controller-added %s",
		mb, stats.Duration.Round(time.Millisecond), mb/stats.Duration.Seconds(), jobTook.Round(time.Millisecond),
		(jobTook - stats.Duration).Round(time.Millisecond))

	tn.mutate(bigSet)
	restoreStart := time.Now()
	rj := tn.awaitRestore(tn.restoreJob("back", b.Name, nil), 4*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	t.Logf("TIMING restore: RestoreJob created to Succeeded in %s (safety snapshot, purge, download, etcdutl restore, 3 members)",
		time.Since(restoreStart).Round(time.Millisecond))
	c := tn.awaitHealthy(3, time.Minute)
	_, key, err := staging.SourceOf(tn.ctx, sb.Client, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key).To(Equal(src.Key), "booted from the Backup's object, as staged")
	tn.expectData(bigSet)
	tn.expectHelmReleaseSuspended(false)
}

// A BackupJob whose strategy names a Secret the namespace lacks behaves as
// on a real cluster: the snapshot Job's Pod cannot start
// (CreateContainerConfigError), so the BackupJob keeps running until the
// Job's deadline and then fails with the operator's reason; nothing is
// written to S3.
func TestBackupWithMissingCredentialsSecretFailsAtTheJobDeadline(t *testing.T) {
	tn := newTenant(t, false)
	g := tn.g
	tn.deploy(1)

	started := time.Now()
	job := tn.backupJob("no-creds")
	g.Consistently(func() backupsv1alpha1.BackupJobPhase {
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		return job.Status.Phase
	}).WithTimeout(snapshotJobDeadline/2).Should(BeElementOf(backupsv1alpha1.BackupJobPhase(""), backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupJobPhaseRunning),
		"the snapshot waits for its Secret; it does not fail at once")
	job = tn.awaitJob(job, snapshotJobDeadline+2*time.Minute)
	g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseFailed))
	g.Expect(job.Status.Message).To(ContainSubstring("JobFailed"))
	g.Expect(time.Since(started)).To(BeNumerically(">=", snapshotJobDeadline))
	g.Expect(job.Status.BackupRef).To(BeNil())

	s3, err := sb.S3Client(sb.S3Credentials.AccessKeyID, sb.S3Credentials.SecretAccessKey)
	g.Expect(err).NotTo(HaveOccurred())
	for o := range s3.ListObjects(tn.ctx, sandbox.DefaultBucket, minio.ListObjectsOptions{Prefix: tn.ns + "/", Recursive: true}) {
		t.Errorf("unexpected object %s (err %v)", o.Key, o.Err)
	}
}
