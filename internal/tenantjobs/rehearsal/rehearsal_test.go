package rehearsal

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// liveState is what a dry run must leave as it was.
type liveState struct {
	clusterUID, clusterRV string
	hrRV                  string
	hrSuspend             bool
}

func observeLive(t *testing.T, ns string) liveState {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, u)).To(Succeed())
	hr := &helmv2.HelmRelease{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, hr)).To(Succeed())
	return liveState{clusterUID: string(u.GetUID()), clusterRV: u.GetResourceVersion(), hrRV: hr.ResourceVersion, hrSuspend: hr.Spec.Suspend}
}

// The dry run: namespaces b and c were deleted (and pods added in
// a) since the Backup. The rehearsal stages the Backup's real object,
// boots it in the Job's throwaway etcd (the real etcd-stage binary) and
// reports b and c coming back, the pod and namespace counts now and
// after, and the revision a restore would start at; it records the
// outcome on the Backup; and it changes nothing live: the EtcdCluster's
// UID and resourceVersion, the HelmRelease's suspend and resourceVersion,
// the live etcd's revision, no claim, no safety snapshot. It reads the
// live cluster once.
func TestDryRunReportsDeletedNamespacesComingBackAndChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	// Since the backup: namespaces b and c deleted, two pods added.
	del(t, cli, "/registry/namespaces/b")
	del(t, cli, "/registry/pods/b/")
	del(t, cli, "/registry/namespaces/c")
	del(t, cli, "/registry/pods/c/")
	put(t, cli, "/registry/pods/a/p3")
	put(t, cli, "/registry/pods/a/p4")
	before := observeLive(t, ns)
	liveRev := revision(t, cli)

	create(t, dryRun(ns, "rehearse", "nightly"))
	rj := waitEnd(t, ns, "rehearse")
	ready := readyOf(rj)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %s", ready.Reason, rj.Status.Message)
	g.Expect(ready.Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsed)))
	rep := reportOf(t, rj)
	g.Expect(rep.NamespacesReturning).To(Equal([]string{"b", "c"}))
	g.Expect(rep.NamespacesVanishing).To(BeEmpty())
	g.Expect(changeOf(rep, "pods")).To(Equal(&driverv1alpha1.CountChange{Name: "pods", Before: 5, After: 9}))
	g.Expect(changeOf(rep, "namespaces")).To(Equal(&driverv1alpha1.CountChange{Name: "namespaces", Before: 1, After: 3}))
	g.Expect(changeOf(rep, "configmaps")).To(BeNil(), "an unchanged count is not listed")
	g.Expect(rep.Resources[0].Name).To(Equal("pods"), "largest change first")
	g.Expect(rep.KeysBefore).To(Equal(int64(7)))
	g.Expect(rep.KeysAfter).To(Equal(int64(13)))
	g.Expect(rep.RevisionBefore).To(Equal(liveRev))
	g.Expect(rep.RevisionAfter).To(Equal(liveRev + stagingstep.DefaultMargin))
	g.Expect(rj.Status.Message).To(ContainSubstring("bring back namespaces b, c"))
	g.Expect(rj.Status.Message).To(ContainSubstring("pods 5 → 9"))
	g.Expect(rj.Status.Message).To(ContainSubstring(fmt.Sprintf("revision %d → %d", liveRev, liveRev+stagingstep.DefaultMargin)))
	// One census (issue 37, item 9): the counts read at the start are the
	// ones compared at the end, and nothing restarted.
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live etcd")
	g.Expect(rj.Status.Message).NotTo(ContainSubstring("driver restart"))

	// Nothing live changed.
	g.Expect(observeLive(t, ns)).To(Equal(before))
	g.Expect(before.hrSuspend).To(BeFalse())
	g.Expect(revision(t, cli)).To(Equal(liveRev))
	var leases coordinationv1.LeaseList
	g.Expect(k.List(ctx, &leases, client.InNamespace(testenv.DriverNamespace))).To(Succeed())
	g.Expect(leases.Items).To(BeEmpty(), "a dry run claims nothing")
	var snaps etcdv1alpha2.EtcdSnapshotList
	g.Expect(k.List(ctx, &snaps, client.InNamespace(ns))).To(Succeed())
	g.Expect(snaps.Items).To(BeEmpty(), "a dry run takes no safety snapshot")
	g.Expect(rj.Finalizers).To(BeEmpty())

	// The Job: the driver's, staged above the live revision it read.
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	g.Expect(jobs.Items[0].Spec.Template.Spec.Containers[0].Args).To(ContainElement(fmt.Sprintf("--revision-floor=%d", liveRev)))
	g.Expect(jobs.Items[0].Name).To(Equal(keyedJobName(rj)))
	g.Expect(metav1.GetControllerOf(&jobs.Items[0]).UID).To(Equal(rj.UID))
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live cluster")

	// The Backup records it; its signature still verifies.
	got := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
	g.Expect(artifact.LastRehearsal(got)).NotTo(BeNil())
	g.Expect(artifact.LastRehearsal(got).Succeeded).To(BeTrue())
	g.Expect(artifact.LastRehearsal(got).RestoreJob).To(Equal("rehearse"))
	v, err := provenance.Verify(ctx, testKeys, got)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Verified).To(BeTrue(), v.Message)
}

// A Backup whose object changed in S3 after it was recorded (flipped
// bytes, same size) is refused by the rehearsal as a restore would refuse
// it: Failed, RehearsalFailed with staging's ArtifactChanged, a Warning
// Event, and a failed rehearsal on the Backup.
func TestDryRunOfACorruptedObjectFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, data := backupOf(t, ns, "nightly", cli)
	create(t, b)
	bad := append([]byte(nil), data...)
	for i := 8192; i < 8192+64; i++ {
		bad[i] ^= 0xff
	}
	key := strings.TrimPrefix(b.Status.Artifact.URI, "s3://"+testBucket+"/")
	putObject(t, key, bad)

	create(t, dryRun(ns, "rehearse", "nightly"))
	rj := waitEnd(t, ns, "rehearse")
	ready := readyOf(rj)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(ready.Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsalFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring(string(stagingstep.ReasonArtifactChanged)))
	g.Expect(rj.Status.Message).To(ContainSubstring("sha256 differs from the recorded checksum"))
	got := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
	g.Expect(artifact.LastRehearsal(got)).NotTo(BeNil())
	g.Expect(artifact.LastRehearsal(got).Succeeded).To(BeFalse())
	g.Eventually(func() []string {
		var evs corev1.EventList
		_ = k.List(ctx, &evs, client.InNamespace(ns))
		var out []string
		for _, e := range evs.Items {
			out = append(out, e.Type+"/"+e.Reason)
		}
		return out
	}).WithTimeout(30 * time.Second).Should(ContainElement("Warning/" + string(backupsv1alpha1.ReasonRehearsalFailed)))
}

// A tenant makes a Job that looks like the rehearsal's: the exact label
// with the RestoreJob's UID, a controller reference to the RestoreJob,
// the driver's image and container name, and a Pod whose termination
// message is a well-formed report of a success that never happened. The
// driver does not read it: it runs its own Job and reports what that
// one read back.
func TestLookAlikeJobIsNotRead(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)

	// The RestoreJob first (its Backup is not there yet, so it waits):
	// the tenant needs its UID.
	rj := dryRun(ns, "rehearse", "nightly")
	create(t, rj)
	yes := true
	forged := step.Report{Envelope: report.Envelope{Outcome: step.OutcomeRehearsed, Reason: step.ReasonRehearsed}, Revision: 7, CompactedRevision: 7, Keys: 424242,
		Keyspaces: []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Objects: 424242, Namespaces: 1, NamespaceNames: []string{"forged"},
			Resources: []driverv1alpha1.ObjectCount{{Name: "pods", Count: 424241}, {Name: "namespaces", Count: 1}}}}}
	fake := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-rehearsal-lookalike", Labels: Labels(string(rj.UID)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: rj.Name, UID: rj.UID, Controller: &yes}}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: Labels(string(rj.UID))},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: ContainerName, Image: testImage, Command: []string{"/bin/sh"}, Args: []string{"-c", "cat /forged-report"}}}}}},
	}
	create(t, fake)
	finishJob(ctx, fake, 0, forged.Line())
	create(t, b)

	done := waitEnd(t, ns, "rehearse")
	g.Expect(done.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), done.Status.Message)
	rep := reportOf(t, done)
	g.Expect(rep.KeysAfter).To(Equal(int64(13)), "the report is the driver's Job's, not the look-alike's")
	g.Expect(rep.NamespacesReturning).NotTo(ContainElement("forged"))
	g.Expect(rep.NamespacesVanishing).To(BeEmpty())
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(2), "the driver ran a Job of its own")
}

// A rehearsal Job deleted before it ended (by the tenant, or by hand)
// ends the dry run with a clear reason instead of waiting for it forever.
func TestDeletedJobEndsTheDryRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	held.Store(ns, true)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	create(t, dryRun(ns, "rehearse", "nightly"))
	var jobs batchv1.JobList
	g.Eventually(func() int {
		_ = k.List(ctx, &jobs, client.InNamespace(ns))
		return len(jobs.Items)
	}).WithTimeout(time.Minute).Should(Equal(1))
	g.Expect(k.Delete(ctx, &jobs.Items[0], client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	rj := &backupsv1alpha1.RestoreJob{}
	g.Eventually(func() backupsv1alpha1.RestoreJobPhase {
		_ = k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, rj)
		return rj.Status.Phase
	}).WithTimeout(30 * time.Second).Should(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsalFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring("was deleted before it ended"))
}

// A driver restarted while the rehearsal Job runs has lost what it held in
// memory (the Job it made, the live counts): it finds its Job again from
// its keyed name and the template rebuilt with the live revision its
// record holds, and reports without counting the live cluster a second
// time (issue 37, items 4 and 9): the revision and key count now are in
// the record; the counts by resource are lost, which the message says.
func TestRestartedDriverFindsItsJobAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	held.Store(ns, true)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	del(t, cli, "/registry/namespaces/c")
	del(t, cli, "/registry/pods/c/")
	create(t, dryRun(ns, "rehearse", "nightly"))
	var jobs batchv1.JobList
	g.Eventually(func() int {
		_ = k.List(ctx, &jobs, client.InNamespace(ns))
		return len(jobs.Items)
	}).WithTimeout(time.Minute).Should(Equal(1))
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, rj)).To(Succeed())
	testReconciler.forget(rj)
	held.Delete(ns)

	rj = waitEnd(t, ns, "rehearse")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	rep := reportOf(t, rj)
	g.Expect(rep.KeysBefore).To(Equal(int64(9)))
	g.Expect(rep.KeysAfter).To(Equal(int64(13)))
	g.Expect(rep.RevisionBefore).To(BeNumerically(">", 0))
	g.Expect(rep.NamespacesReturning).To(BeEmpty(), "the counts by resource were lost, not read again")
	g.Expect(rj.Status.Message).To(ContainSubstring("lost with a driver restart"))
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live cluster")
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1), "no second Job")
}

// A dry run deleted while its Job runs (it holds no finalizer) leaves
// nothing in the driver's memory: its live counts can be a whole
// cluster's.
func TestADeletedDryRunIsForgotten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	held.Store(ns, true)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	create(t, dryRun(ns, "rehearse", "nightly"))
	var jobs batchv1.JobList
	g.Eventually(func() int {
		_ = k.List(ctx, &jobs, client.InNamespace(ns))
		return len(jobs.Items)
	}).WithTimeout(time.Minute).Should(Equal(1))
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, rj)).To(Succeed())
	key := memoKey(rj)
	g.Eventually(func() bool { return testReconciler.madeJob(key) != nil }).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Expect(k.Delete(ctx, rj)).To(Succeed())
	g.Eventually(func() bool {
		st, _ := testReconciler.reads().Look(liverevision.Key{Job: rj.UID, Purpose: liverevision.ForRehearsal})
		return st != liverevision.NotStarted || testReconciler.madeJob(key) != nil
	}).WithTimeout(30 * time.Second).Should(BeFalse())
}

// Attack (issue 37, item 1): a census takes as long as the tenant's etcd
// makes it (up to liverevision.CensusTimeout). With two tenants' censuses
// stalled, as many as the controller has workers (and fewer than
// CensusSlots), a third tenant's dry run still runs to its end; the stalled ones end too once their etcds
// answer, each after one census. Seen failing with the census taken on
// the worker (as before: Census called from Reconcile): the third dry run
// was never reconciled (waitEnd gave up after 3 minutes).
func TestACensusInFlightHoldsUpNoOtherTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	stalled := []string{newNamespace(t), newNamespace(t)}
	for _, ns := range stalled {
		deployApp(t, ns)
		b, _ := backupOf(t, ns, "nightly", liveEtcd(t, ns))
		create(t, b)
		stalls.Store(ns, release)
		create(t, dryRun(ns, "rehearse", "nightly"))
	}
	g.Eventually(func() []int32 { return []int32{censusesOf(stalled[0]), censusesOf(stalled[1])} }).
		WithTimeout(time.Minute).Should(Equal([]int32{1, 1}), "both censuses in flight")

	other := newNamespace(t)
	deployApp(t, other)
	b, _ := backupOf(t, other, "nightly", liveEtcd(t, other))
	create(t, b)
	create(t, dryRun(other, "rehearse", "nightly"))
	rj := waitEnd(t, other, "rehearse")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	for _, ns := range stalled {
		g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, rj)).To(Succeed())
		// Started (Running) and still counting: nothing recorded yet.
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseRunning), "%s is still counting", ns)
		g.Expect(rj.Annotations).NotTo(HaveKey(rehearsalrecord.Annotation), "%s is still counting", ns)
	}

	once.Do(func() { close(release) })
	for _, ns := range stalled {
		rj := waitEnd(t, ns, "rehearse")
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
		g.Expect(censusesOf(ns)).To(Equal(int32(1)))
	}
}
