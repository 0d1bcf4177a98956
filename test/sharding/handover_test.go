package sharding

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// A shard's leader dies right after it purged the tenant's cluster, in
// the middle of a restore: the shard's standby takes the leader Lease and
// finishes the restore. The cluster is purged once and re-created once,
// the RestoreJob succeeds once, and the dead replica wrote nothing after
// its death.
func TestHandoverMidRestoreRestoresOnce(t *testing.T) {
	g := NewWithT(t)
	tn := tenantIn(t, "handover", "1")
	purge := func(w write) bool {
		return w.Verb == "delete" && w.Kind == "EtcdCluster" && w.Namespace == tn.NS
	}
	a := startReplica(t, "shard-1-a", 1, true, purge)
	b := tn.Backup("before", "") // A leads: it is the only replica
	standby := startReplica(t, "shard-1-b", 1, true, nil)
	g.Consistently(func() []write { return standby.writes.of(inNamespaces(tn)) }).
		WithTimeout(2*time.Second).Should(BeEmpty(), "the standby acts while the leader lives")

	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "restore"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: b.Name}}}
	tn.Create(rj)
	g.Eventually(a.writes.isDead).WithTimeout(60*time.Second).Should(BeTrue(), "the leader never reached the purge")
	rj = tn.AwaitRestore(rj)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)

	both := func(f func(write) bool) []write {
		return append(a.writes.of(f), standby.writes.of(f)...)
	}
	clusterWrite := func(verb string) func(write) bool {
		return func(w write) bool { return w.Verb == verb && w.Kind == "EtcdCluster" && w.Namespace == tn.NS }
	}
	g.Expect(both(clusterWrite("delete"))).To(HaveLen(1), "purges")
	g.Expect(both(clusterWrite("create"))).To(HaveLen(1), "re-creates")
	g.Expect(standby.writes.of(clusterWrite("create"))).To(HaveLen(1), "the standby re-creates the cluster")
	// The dead leader never got as far; the standby's status writes turn
	// the job Succeeded once (a later write may report on the resumed
	// HelmRelease, still Succeeded).
	statusOf := func(w write) bool { return w.Kind == "RestoreJob" && w.Status && w.Namespace == tn.NS }
	for _, w := range a.writes.of(statusOf) {
		g.Expect(w.Phase).NotTo(Equal(string(backupsv1alpha1.RestoreJobPhaseSucceeded)))
	}
	turns, last := 0, ""
	for _, w := range standby.writes.of(statusOf) {
		if w.Phase == string(backupsv1alpha1.RestoreJobPhaseSucceeded) && last != w.Phase {
			turns++
		}
		last = w.Phase
	}
	g.Expect(turns).To(Equal(1), "times the RestoreJob turned Succeeded")
	g.Expect(platform.Reason(rj.Status.Conditions)).NotTo(BeEmpty())
	g.Expect(tn.Cluster().Annotations).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
}
