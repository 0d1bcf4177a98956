package backupjob_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// A snapshot that has started is followed to its end even past the
// deadline: the operator may still store it, and a Backup must account for
// it. The job stays Running, says so, and succeeds when the snapshot does.
func TestStartedSnapshotIsFollowedPastTheDeadline(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(func(o *manager.Options) { o.BackupDeadline = 3 * time.Second })
	job := w.job("slow")
	w.create(job)
	snap := w.awaitSnapshot(job)
	time.Sleep(4 * time.Second)
	w.g.Consistently(func() backupsv1alpha1.BackupJobPhase {
		w.get(job)
		return job.Status.Phase
	}).WithTimeout(2 * time.Second).Should(Equal(backupsv1alpha1.BackupJobPhaseRunning))
	w.g.Expect(job.Status.Message).To(ContainSubstring("past the 3s deadline"))
	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
}

// The Backup a job records is signed by the driver, with the source
// cluster's etcd version.
func TestRecordedBackupIsSigned(t *testing.T) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("signed")
	w.create(job)
	w.operatorFinishes(w.awaitSnapshot(job), etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	b := &backupsv1alpha1.Backup{}
	b.Namespace, b.Name = w.ns, job.Status.BackupRef.Name
	w.get(b)
	w.g.Expect(b.Spec.DriverMetadata).To(HaveKey(artifact.MetaProvenance))
	w.g.Expect(b.Spec.DriverMetadata).To(HaveKeyWithValue(artifact.MetaEtcdVersion, "3.6.11"))
}

// The endpoint policy applies when the destination is rendered: plain http
// needs the strategy's opt-in, and a loopback address is refused unless
// the driver allows it.
func TestEndpointPolicyAtRender(t *testing.T) {
	for name, tc := range map[string]struct {
		allowHTTP bool
		cidrs     []string
		want      string
	}{
		"http without the opt-in": {allowHTTP: false, cidrs: []string{"127.0.0.0/8"}, want: "allowHTTPEndpoint"},
		"loopback not allowed":    {allowHTTP: true, cidrs: nil, want: "may not reach"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policyObj()
			p.Spec.AllowHTTPEndpoint = tc.allowHTTP
			w.create(w.strategyObj(w.s3Template()), p, w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
			w.cluster(true)
			w.startDriver(func(o *manager.Options) { o.AllowedEndpointCIDRs = tc.cidrs })
			job := w.job("refused")
			w.create(job)
			w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseFailed, 30*time.Second)
			cond := w.awaitReason(job, backupsv1alpha1.BackupReasonInvalidDestination)
			w.g.Expect(cond.Message).To(ContainSubstring(tc.want))
			w.g.Expect(w.snapshotsOf(job)).To(BeEmpty())
		})
	}
}
