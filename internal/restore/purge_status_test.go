package restore

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// The purge and the re-create of a cluster captured live, after the
// staging, write no status of their own: whatever write comes next records
// TargetPurged from the world, so it is never missing once the old cluster
// and its volumes are gone.
func TestPurgeRecordedFromTheWorld(t *testing.T) {
	gone := func(o *observation) { o.cluster, o.pvcs = nil, 0 }
	for name, tc := range map[string]struct {
		setup  func(o *observation)
		quiet  bool // the decision writes no status
		purged bool // the status written (now or by the next write) records the purge
	}{
		"purged: the re-create is quiet": {gone, true, true},
		"purged, then the deadline: the failure records the purge": {func(o *observation) {
			gone(o)
			o.now = t0.Add(31 * time.Minute)
		}, false, true},
		"re-created by this job: the bootstrap's write records the purge": {func(o *observation) {
			ours(o, "b", o.capture.source.Key, 1, false)
		}, false, true},
		"volumes still there: the wait is quiet":           {func(o *observation) { o.cluster, o.pvcs = nil, 2 }, true, true},
		"the old cluster still there: its delete is quiet": {func(o *observation) {}, true, true},
		"after WaitingForSnapshots (not the staging's status) the purge writes its own": {func(o *observation) {
			meta.SetStatusCondition(&o.job.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady,
				Status: metav1.ConditionFalse, Reason: string(backupsv1alpha1.ReasonWaitingForSnapshots), Message: "waiting"})
		}, false, false},
		"without the staging step the purge writes its own status, not yet purged": {func(o *observation) {
			no := false
			o.opts.BumpRevision = &no
		}, false, false},
		"a capture without the cluster's UID: the re-create writes its own status": {func(o *observation) {
			gone(o)
			o.capture.uid = ""
		}, false, true},
		"an absent cluster: the re-create writes its own status": {func(o *observation) {
			gone(o)
			o.capture.from = "older-capture"
			purgedWorld(o)
		}, false, true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := world()
			o.capture.uid = "old-uid"
			// The staging's status is the last one written.
			meta.SetStatusCondition(&o.job.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady,
				Status: metav1.ConditionFalse, Reason: string(backupsv1alpha1.ReasonStaging), Message: "staging"})
			old := o.cluster
			tc.setup(o)
			d := decide(o, 30*time.Minute)
			g.Expect(quiet(o, d)).To(Equal(tc.quiet), "decision %s", d.state)
			st := desiredStatus(o, d)
			if tc.quiet {
				// The next write is the bootstrap's, on the re-created cluster.
				o.cluster = old
				ours(o, "b", o.capture.source.Key, 1, false)
				st = desiredStatus(o, decide(o, 30*time.Minute))
			}
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, backupsv1alpha1.RestoreConditionPurged)).To(Equal(tc.purged), "decision %s", d.state)
		})
	}
}
