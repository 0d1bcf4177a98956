package restore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// pointOptions asks for a restore to t.
func pointOptions(t time.Time) string {
	return fmt.Sprintf(`{"pointInTime": %q}`, t.UTC().Format(time.RFC3339))
}

// A namespace created before the point and one after it: the chain of
// two segments every point test replays.
func beforeAndAfter(p pointBase, t0 time.Time) [][]changelog.Revision {
	r := p.base.Revision
	return [][]changelog.Revision{
		{pointchain.Put(r+1, t0.Add(10*time.Minute), "/registry/namespaces/before", "b")},
		{pointchain.Put(r+2, t0.Add(20*time.Minute), "/registry/namespaces/after", "a")},
	}
}

// A RestoreJob with spec.options.pointInTime restores the base Backup
// and its chain replayed to the point, through the one restore path: the
// staging step (run for real on the Job's arguments) stages the etcd as
// it was at the point, raised above the live revision; the cluster is
// re-created from that claim; status and Events name the base and the
// point.
func TestARestoreToAPointStagesTheReplayedSnapshot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	old := getCluster(g, ns)
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	pb := newPointBase(t, ns, "nightly", t0, "/registry/namespaces/kept", "k")
	pb.upload(t, beforeAndAfter(pb, t0)...)
	point := t0.Add(15 * time.Minute)
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", pointOptions(point)))).To(Succeed())

	st := playStaging(t, ns, "restore")
	g.Expect(st.code).To(Equal(report.ExitSucceeded), "%+v", st.rep)
	keys, rev := stagedKeys(t, st.file)
	sort.Strings(keys)
	g.Expect(keys).To(Equal([]string{"/registry/namespaces/before", "/registry/namespaces/kept"}), "the etcd as it was at the point")
	g.Expect(st.rep.Point).NotTo(BeNil())
	g.Expect(st.rep.Point.Revision).To(Equal(pb.base.Revision + 1))
	g.Expect(st.rep.SnapshotRevision).To(Equal(pb.base.Revision + 1))
	g.Expect(rev).To(Equal(int64(defaultLiveRevision+stagingstep.DefaultMargin)), "raised above the live revision")
	args := strings.Join(st.job.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).To(ContainSubstring("--chain=" + pb.chain.Chain))

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(rj.Status.Message).To(ContainSubstring("Backup nightly"))
	g.Expect(rj.Status.Message).To(ContainSubstring("replayed to " + point.UTC().Format(time.RFC3339)))
	c := getCluster(g, ns)
	g.Expect(c.GetUID()).NotTo(Equal(old.GetUID()))
	g.Expect(bootstrapKey(c)).To(Equal(ns + "/etcd/nightly.db"))
	g.Expect(eventReasons(ns)).To(ContainElement(string(backupsv1alpha1.ReasonPointBaseChosen)))
	g.Expect(strings.Join(eventNotes(ns), "\n")).To(ContainSubstring("base Backup nightly (revision"))
}

// A segment corrupted or swapped in S3 ends the restore before anything
// is destroyed: the staging step refuses the chain with a reason naming
// it, the restore ends StagingRefused with that reason, the EtcdCluster
// is the one it was and the HelmRelease is resumed.
func TestABrokenChainEndsTheRestoreBeforeAnythingIsDestroyed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, p pointBase, segs []pointchain.Segment)
		want   string
	}{
		{"a corrupted segment", func(t *testing.T, p pointBase, segs []pointchain.Segment) {
			bad := append([]byte(nil), segs[0].Data...)
			bad[len(bad)-2] ^= 1
			pointchain.Replace(context.Background(), t, p.chain, segs[0].Key, bad, pointchain.SHA256(segs[0].Data))
		}, string(pointreplay.ReasonChainChecksum)},
		{"two segments swapped", func(t *testing.T, p pointBase, segs []pointchain.Segment) {
			pointchain.Replace(context.Background(), t, p.chain, segs[0].Key, segs[1].Data, pointchain.SHA256(segs[1].Data))
			pointchain.Replace(context.Background(), t, p.chain, segs[1].Key, segs[0].Data, pointchain.SHA256(segs[0].Data))
		}, string(pointreplay.ReasonChainOutOfOrder)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			deployApp(t, ns, appOpts{})
			op := startOperator(t, ns)
			op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
			old := getCluster(g, ns)
			t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
			pb := newPointBase(t, ns, "nightly", t0, "/registry/namespaces/kept", "k")
			tc.break_(t, pb, pb.upload(t, beforeAndAfter(pb, t0)...))
			g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", pointOptions(t0.Add(25*time.Minute))))).To(Succeed())

			st := playStaging(t, ns, "restore")
			g.Expect(st.code).To(Equal(report.ExitRefused))
			g.Expect(string(st.rep.Reason)).To(Equal(tc.want))
			rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
			g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonStagingRefused)))
			g.Expect(rj.Status.Message).To(ContainSubstring(tc.want))
			g.Expect(rj.Status.Message).To(ContainSubstring("the live cluster was not touched"))
			g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()), "the EtcdCluster is the one it was")
			g.Expect(purged(rj)).To(BeFalse())
			g.Eventually(func(g Gomega) { g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse()) }).Should(Succeed())
		})
	}
}

// No Backup of the application at or before the point: a terminal
// refusal that names the point, with a Warning Event; nothing is
// claimed, suspended or destroyed.
func TestARestoreToAPointWithNoBaseIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	old := getCluster(g, ns)
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	pb := newPointBase(t, ns, "nightly", t0, "/registry/namespaces/kept", "k")
	pb.upload(t, beforeAndAfter(pb, t0)...)
	before := t0.Add(-time.Minute)
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", pointOptions(before)))).To(Succeed())

	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonNoBaseAtPoint)))
	g.Expect(rj.Status.Message).To(ContainSubstring(before.UTC().Format(time.RFC3339)))
	g.Expect(rj.Status.Message).To(ContainSubstring("Nothing was changed"))
	g.Expect(rj.Annotations).NotTo(HaveKey(pointintime.PinAnnotation))
	g.Expect(eventReasons(ns)).To(ContainElement(string(backupsv1alpha1.ReasonNoBaseAtPoint)))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(leaseCount(g, ns)).To(BeZero())
	g.Expect(writes.of(ns)).NotTo(ContainElement(HavePrefix("create EtcdSnapshot")), "no safety snapshot for a refusal")
}

// The base is chosen once and pinned on the job: a newer Backup that is
// also at or before the point, appearing while the restore runs, and a
// driver restart (what it made forgotten) do not move it.
func TestThePinnedBaseSurvivesARestartAndANewerBackup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging, op.HoldSnapshots = true, true })
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	first := newPointBase(t, ns, "nightly", t0, "/registry/namespaces/kept", "k")
	first.upload(t, beforeAndAfter(first, t0)...)
	point := t0.Add(15 * time.Minute)
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", pointOptions(point)))).To(Succeed())

	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonSafetySnapshotRunning)
	g.Expect(rj.Annotations).To(HaveKey(pointintime.PinAnnotation))
	// A newer base at or before the point, with a chain of its own (more
	// keys: another revision, another chain).
	newer := newPointBase(t, ns, "hourly", t0.Add(5*time.Minute), "/registry/namespaces/kept", "k", "/registry/namespaces/x", "x", "/registry/namespaces/y", "y")
	g.Expect(newer.base.Revision).NotTo(Equal(first.base.Revision))
	newer.upload(t, beforeAndAfter(newer, t0)...)
	upgradedDriverForgets(rj.UID)
	op.Set(func(op *testenv.Operator) { op.HoldSnapshots = false })

	st := playStaging(t, ns, "restore")
	g.Expect(st.code).To(Equal(report.ExitSucceeded), "%+v", st.rep)
	args := strings.Join(st.job.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).To(ContainSubstring("--key=" + ns + "/etcd/nightly.db"))
	g.Expect(args).To(ContainSubstring("--chain=" + first.chain.Chain))
	keys, _ := stagedKeys(t, st.file)
	sort.Strings(keys)
	g.Expect(keys).To(Equal([]string{"/registry/namespaces/before", "/registry/namespaces/kept"}))
	rj = waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(rj.Status.Message).To(ContainSubstring("Backup nightly"))
	g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal(ns + "/etcd/nightly.db"))
}
