package rehearsal

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// startHeld starts a dry run to the fixture's point in a namespace whose
// Jobs wait (held) and returns once its Job exists: its base is chosen
// and pinned. The Job runs once the test lets go of the namespace (a Job
// still held at the end never runs: the namespace is the test's own).
func startHeld(t *testing.T, f pointFixture, name string) *batchv1.Job {
	t.Helper()
	held.Store(f.ns, true)
	create(t, dryRunTo(f.ns, name, "evening", fmt.Sprint(f.point)))
	var jobs batchv1.JobList
	NewWithT(t).Eventually(func() []batchv1.Job {
		_ = k.List(context.Background(), &jobs, client.InNamespace(f.ns))
		return jobs.Items
	}).WithTimeout(2 * time.Minute).Should(HaveLen(1))
	return &jobs.Items[0]
}

// A Backup that appears while a dry run to a point runs, and would be
// the better base now, changes nothing: the dry run rehearses the base
// it pinned when it started, with the Job it built from it.
func TestADryRunToAPointKeepsTheBaseItStartedWith(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newPointFixture(t)
	job := startHeld(t, f, "pinned")

	// A Backup at the revision after the base, taken later: the newest
	// at or before the point now.
	rebuilt, _ := backupOf(t, f.ns, "later", f.cli)
	inspected(t, rebuilt, f.base+1)
	create(t, rebuilt)
	held.Delete(f.ns)

	rj := waitEnd(t, f.ns, "pinned")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	g.Expect(rj.Status.Message).To(ContainSubstring("base Backup nightly"))
	g.Expect(reportOf(t, rj).NamespacesReturning).To(Equal([]string{"b"}))
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	g.Expect(jobs.Items[0].UID).To(Equal(job.UID))
	got := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(rebuilt), got)).To(Succeed())
	g.Expect(artifact.LastRehearsal(got)).To(BeNil(), "the later Backup was not rehearsed")
}

// The pinned base deleted while the dry run runs ends it: it never
// moves to another base.
func TestADryRunToAPointWhoseBaseIsDeletedEnds(t *testing.T) {
	g := NewWithT(t)
	f := newPointFixture(t)
	startHeld(t, f, "pinned")
	g.Expect(k.Delete(context.Background(), f.nightly)).To(Succeed())

	rj := waitEnd(t, f.ns, "pinned")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonPointBaseLost)))
	g.Expect(rj.Status.Message).To(ContainSubstring("nightly"))
}

// The point edited while the dry run runs (Cozystack's RestoreJob CRD
// does not make the spec immutable) ends it: it never rehearses a point
// its base was not chosen for.
func TestADryRunToAPointWhosePointIsEditedEnds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newPointFixture(t)
	startHeld(t, f, "pinned")
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "pinned"}, rj)).To(Succeed())
	rj.Spec.Options = restoreoptions.Options{DryRun: true, PointInTime: fmt.Sprint(f.point + 1)}.Raw()
	g.Expect(k.Update(ctx, rj)).To(Succeed())

	rj = waitEnd(t, f.ns, "pinned")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonPointBaseLost)))
	g.Expect(rj.Status.Message).To(ContainSubstring(fmt.Sprintf("the base was chosen for %q", fmt.Sprint(f.point))))
}
