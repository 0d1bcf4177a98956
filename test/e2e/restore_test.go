package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// A restore from a Backup whose object key is wrong fails (the seed cannot
// be restored) without losing data: the safety Backup it took first brings
// the old data back through a second RestoreJob.
func TestRestoreFromWrongKeyFailsAndSafetyBackupRecovers(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	set := kvdata.Set{Prefix: "/sentinel", N: 2000, Size: 256, Gen: "live"}
	tn.write(set)

	job := tn.awaitJob(tn.backupJob("good"), 2*time.Minute)
	g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), job.Status.Message)
	var good backupsv1alpha1.Backup
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: job.Status.BackupRef.Name}, &good)).To(Succeed())

	// The same Backup but pointing at an object that does not exist.
	bad := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "wrong-key"},
		Spec:       good.Spec,
		Status:     *good.Status.DeepCopy(),
	}
	bad.Status.Artifact.URI = good.Status.Artifact.URI + ".missing"
	g.Expect(sb.Client.Create(tn.ctx, bad)).To(Succeed())

	failed := tn.awaitRestore(tn.restoreJob("from-wrong-key", bad.Name, map[string]any{"restoreTimeoutSeconds": 75}), 3*time.Minute)
	g.Expect(failed.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(failed.Status.Message).To(ContainSubstring("safety"), "the failure says where the old data is")
	tn.expectHelmReleaseSuspended(false)

	var safety backupsv1alpha1.BackupList
	g.Expect(sb.Client.List(tn.ctx, &safety, client.InNamespace(tn.ns),
		client.MatchingLabels{backupsv1alpha1.SafetyBackupLabel: failed.Name})).To(Succeed())
	g.Expect(safety.Items).To(HaveLen(1))
	g.Expect(failed.Status.Message).To(ContainSubstring(safety.Items[0].Name))

	back := tn.awaitRestore(tn.restoreJob("from-safety", safety.Items[0].Name, map[string]any{"safetySnapshot": false}), 3*time.Minute)
	g.Expect(back.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), back.Status.Message)
	tn.awaitHealthy(1, time.Minute)
	tn.expectData(set)
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
