package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
)

// Without a suspend, the helm-controller stand-in puts a deleted EtcdCluster
// straight back (a new incarnation); with the release suspended it stays
// gone. This is why the restore path suspends the HelmRelease first.
func TestHelmReleaseReappliesDeletedClusterUnlessSuspended(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	key := client.ObjectKey{Namespace: tn.ns, Name: "etcd"}
	var before etcdv1alpha2.EtcdCluster
	g.Expect(sb.Client.Get(tn.ctx, key, &before)).To(Succeed())

	g.Expect(sb.Client.Delete(tn.ctx, &before)).To(Succeed())
	g.Eventually(func() types.UID {
		var c etcdv1alpha2.EtcdCluster
		if err := sb.Client.Get(tn.ctx, key, &c); err != nil {
			return ""
		}
		return c.UID
	}).WithTimeout(30*time.Second).Should(And(Not(BeEmpty()), Not(Equal(before.UID))), "re-applied by the HelmRelease")
	tn.awaitHealthy(1, time.Minute)

	var hr helmv2.HelmRelease
	g.Expect(sb.Client.Get(tn.ctx, key, &hr)).To(Succeed())
	hr.Spec.Suspend = true
	g.Expect(sb.Client.Update(tn.ctx, &hr)).To(Succeed())
	// An apply that started before the suspend may still land once (the
	// stand-in reads the release, then renders and applies); after that,
	// nothing brings the cluster back. Delete whatever lands until the
	// cluster has stayed absent for three seconds.
	var absentSince time.Time
	g.Eventually(func() error {
		var c etcdv1alpha2.EtcdCluster
		if err := sb.Client.Get(tn.ctx, key, &c); err == nil {
			_ = sb.Client.Delete(tn.ctx, &c)
			absentSince = time.Time{}
			return fmt.Errorf("EtcdCluster %s still exists", c.UID)
		} else if client.IgnoreNotFound(err) != nil {
			return err
		}
		if absentSince.IsZero() {
			absentSince = time.Now()
		}
		if time.Since(absentSince) < 3*time.Second {
			return fmt.Errorf("EtcdCluster absent for %s only", time.Since(absentSince))
		}
		return nil
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func() error {
		return sb.Client.Get(tn.ctx, key, &etcdv1alpha2.EtcdCluster{})
	}).WithTimeout(3 * time.Second).Should(HaveOccurred())
	g.Eventually(func() []string { return sb.Fleet.Endpoints(key) }).WithTimeout(10*time.Second).Should(BeEmpty(), "members stopped")
}

// A Backup edited to point at an object that does not exist is refused
// before anything is touched: the live data stays.
func TestRestoreOfAMissingObjectIsRefused(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	set := kvdata.Set{Prefix: "/sentinel", N: 500, Size: 128, Gen: "live"}
	tn.write(set)
	good := tn.takeBackup("good")
	before := tn.awaitHealthy(1, time.Minute)

	bad := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "wrong-key"},
		Spec:       good.Spec,
		Status:     *good.Status.DeepCopy(),
	}
	bad.Status.Artifact.URI = good.Status.Artifact.URI + ".missing"
	g.Expect(sb.Client.Create(tn.ctx, bad)).To(Succeed())

	failed := tn.awaitRestore(tn.restoreJob("from-wrong-key", bad.Name, nil), 2*time.Minute)
	g.Expect(failed.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(failed.Status.Message).To(ContainSubstring("Nothing was changed"))
	tn.expectHelmReleaseSuspended(false)
	after := tn.awaitHealthy(1, time.Minute)
	g.Expect(after.UID).To(Equal(before.UID))
	tn.expectData(set)
}

// A restore that fails once the old cluster is gone rolls back: the
// snapshot object was replaced by garbage of the same size (verify: Size
// only checks the size), the operator cannot bootstrap from it, and the
// driver re-creates the cluster from the safety Backup it took first. The
// job ends Failed saying so, with the pre-restore data back.
func TestFailedRestoreRollsBackToTheSafetyBackup(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	old := kvdata.Set{Prefix: "/sentinel", N: 500, Size: 128, Gen: "backed-up"}
	tn.write(old)
	good := tn.takeBackup("good")
	live := kvdata.Set{Prefix: "/sentinel", N: 500, Size: 128, Gen: "live"}
	tn.write(live)
	tn.overwriteObject(good)

	// The operator's own S3 route (bumpRevision: false), so the garbage
	// reaches the operator: the staging step would refuse it before the
	// purge (TestGarbageOfTheRightSizeIsRefusedBeforeThePurge).
	rj := tn.awaitRestore(tn.restoreJob("doomed", good.Name, map[string]any{"verify": "Size", "restoreTimeoutSeconds": 45, "bumpRevision": false}), 3*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed), rj.Status.Message)
	g.Expect(rj.Status.Message).To(ContainSubstring("rolled back"))
	g.Expect(meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady).Reason).
		To(Equal(string(backupsv1alpha1.ReasonBootstrapFailed)), "the operator gave up, the driver did not wait out its deadline")
	rolled := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionRollback)
	g.Expect(rolled).NotTo(BeNil())
	g.Expect(rolled.Status).To(Equal(metav1.ConditionTrue))
	tn.expectHelmReleaseSuspended(false)
	c := tn.awaitHealthy(1, time.Minute)
	g.Expect(c.Annotations[backupsv1alpha1.RestoredFromAnnotation]).To(ContainSubstring("safety"))
	tn.expectData(live)
}

// Attack: the object is replaced after it was recorded, by bytes of the
// same size (verify: Size cannot tell). The staging Job, which accepts only
// the recorded sha256, refuses it: the restore fails before anything is
// destroyed and the live data stays.
func TestGarbageOfTheRightSizeIsRefusedBeforeThePurge(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	tn.write(kvdata.Set{Prefix: "/sentinel", N: 200, Size: 128, Gen: "backed-up"})
	good := tn.takeBackup("good")
	live := kvdata.Set{Prefix: "/sentinel", N: 200, Size: 128, Gen: "live"}
	tn.write(live)
	before := tn.awaitHealthy(1, time.Minute)
	tn.overwriteObject(good)

	rj := tn.awaitRestore(tn.restoreJob("swapped", good.Name, map[string]any{"verify": "Size"}), 3*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed), rj.Status.Message)
	g.Expect(meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady).Reason).
		To(Equal(string(backupsv1alpha1.ReasonStagingRefused)), rj.Status.Message)
	g.Expect(rj.Status.Message).To(ContainSubstring("ArtifactChanged"))
	g.Expect(meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionPurged)).To(BeNil())
	after := tn.awaitHealthy(1, time.Minute)
	g.Expect(after.UID).To(Equal(before.UID), "the live cluster was not touched")
	tn.expectHelmReleaseSuspended(false)
	tn.expectData(live)

	// The staging claim goes with the refused restore, and so do the
	// staging Job and its Pods: a finished Pod still names the claim, and
	// PVC protection would keep it Terminating for the Job's day-long TTL.
	staging := client.MatchingLabels{backupsv1alpha1.StagingLabel: string(rj.UID)}
	g.Eventually(func(g Gomega) {
		var pvcs corev1.PersistentVolumeClaimList
		var jobs batchv1.JobList
		var pods corev1.PodList
		g.Expect(sb.Client.List(tn.ctx, &pvcs, client.InNamespace(tn.ns), staging)).To(Succeed())
		g.Expect(sb.Client.List(tn.ctx, &jobs, client.InNamespace(tn.ns), staging)).To(Succeed())
		g.Expect(sb.Client.List(tn.ctx, &pods, client.InNamespace(tn.ns), staging)).To(Succeed())
		g.Expect(pvcs.Items).To(BeEmpty(), "the refused restore's staging claim lingers")
		g.Expect(jobs.Items).To(BeEmpty(), "the refused restore's staging Job lingers")
		g.Expect(pods.Items).To(BeEmpty(), "the refused restore's staging Pods linger")
	}).WithTimeout(45 * time.Second).Should(Succeed())
}

// takeBackup runs a BackupJob to success and returns its Backup.
func (tn *tenant) takeBackup(name string) *backupsv1alpha1.Backup {
	tn.t.Helper()
	job := tn.awaitJob(tn.backupJob(name), 2*time.Minute)
	tn.g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), job.Status.Message)
	b := &backupsv1alpha1.Backup{}
	tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: job.Status.BackupRef.Name}, b)).To(Succeed())
	return b
}

// overwriteObject replaces b's S3 object with as many bytes of garbage.
func (tn *tenant) overwriteObject(b *backupsv1alpha1.Backup) {
	tn.t.Helper()
	src, err := artifact.Resolve(b)
	tn.g.Expect(err).NotTo(HaveOccurred())
	s3, err := sb.S3Client(sb.S3Credentials.AccessKeyID, sb.S3Credentials.SecretAccessKey)
	tn.g.Expect(err).NotTo(HaveOccurred())
	garbage := bytes.Repeat([]byte("not an etcd snapshot "), int(b.Status.Artifact.SizeBytes)/21+1)[:b.Status.Artifact.SizeBytes]
	_, err = s3.PutObject(tn.ctx, src.Bucket, src.Key, bytes.NewReader(garbage), int64(len(garbage)), minio.PutObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
}

func (tn *tenant) restoreJob(name, backup string, options map[string]any) *backupsv1alpha1.RestoreJob {
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}},
	}
	if options != nil {
		raw, err := json.Marshal(options)
		tn.g.Expect(err).NotTo(HaveOccurred())
		rj.Spec.Options = &runtime.RawExtension{Raw: raw}
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, rj)).To(Succeed())
	return rj
}

func (tn *tenant) awaitRestore(rj *backupsv1alpha1.RestoreJob, timeout time.Duration) *backupsv1alpha1.RestoreJob {
	tn.t.Helper()
	tn.g.Eventually(func() backupsv1alpha1.RestoreJobPhase {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		return rj.Status.Phase
	}).WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(
		BeElementOf(backupsv1alpha1.RestoreJobPhaseSucceeded, backupsv1alpha1.RestoreJobPhaseFailed),
		func() string { return fmt.Sprintf("%+v", rj.Status) })
	return rj
}

// write puts set into the application's cluster.
func (tn *tenant) write(set kvdata.Set) {
	tn.t.Helper()
	cli := tn.etcd()
	tn.g.Expect(set.Write(tn.ctx, cli)).To(Succeed())
}

// mutate overwrites the first keys of set with another generation and
// deletes the last ones, so that the live data no longer matches set.
func (tn *tenant) mutate(set kvdata.Set) {
	tn.t.Helper()
	cli := tn.etcd()
	changed := kvdata.Set{Prefix: set.Prefix, N: set.N / 10, Size: set.Size, Gen: "after-backup"}
	tn.g.Expect(changed.Write(tn.ctx, cli)).To(Succeed())
	_, err := cli.Delete(tn.ctx, set.Key(set.N-100), clientv3.WithRange(set.Key(set.N)))
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(set.Check(tn.ctx, cli)).NotTo(Succeed(), "the live data differs from the backup")
}

// expectData checks that the application's cluster holds exactly set.
func (tn *tenant) expectData(set kvdata.Set) {
	tn.t.Helper()
	cli := tn.etcd()
	tn.g.Expect(set.Check(tn.ctx, cli)).To(Succeed())
}

func (tn *tenant) expectHelmReleaseSuspended(want bool) {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		var hr helmv2.HelmRelease
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &hr)).To(Succeed())
		g.Expect(hr.Spec.Suspend).To(Equal(want))
		g.Expect(meta.IsStatusConditionTrue(hr.Status.Conditions, "Ready")).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// etcd opens a client to the application's live members; it is closed when
// the test ends.
func (tn *tenant) etcd() *clientv3.Client {
	tn.t.Helper()
	cli, err := etcdproc.Client(sb.Fleet.Endpoints(client.ObjectKey{Namespace: tn.ns, Name: "etcd"})...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.t.Cleanup(func() { _ = cli.Close() })
	return cli
}
