package restore

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The whole restore: safety Backup, capture, suspend, purge, re-create with
// the exact key and the chart's metadata, health gate, resume, clean up.
func TestHappyPath(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-x1y2z"))).To(Succeed())
	before := testutil.ToFloat64(restoresTotal.WithLabelValues("succeeded", string(backupsv1alpha1.ReasonRestoreCompleted)))

	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)

	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonRestoreCompleted)))
	g.Expect(rj.Status.StartedAt).NotTo(BeNil())
	g.Expect(rj.Status.CompletedAt).NotTo(BeNil())

	// The new cluster: this restore's exact object, the chart's metadata and
	// the unknown spec field survived.
	c := getCluster(g, ns)
	g.Expect(c.GetUID()).NotTo(Equal(old.GetUID()))
	g.Expect(bootstrapKey(c)).To(Equal("tenant/etcd/nightly-x1y2z.db"))
	g.Expect(c.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
	g.Expect(c.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-name", "etcd"))
	g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
	tenant, _, _ := unstructured.NestedString(c.Object, "spec", "additionalMetadata", "labels", "tenant")
	g.Expect(tenant).To(Equal("t1"))

	// The application is handed back.
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(claimHolder(g, ns)).To(BeNil())
	g.Eventually(func(g Gomega) {
		cond := condition(getJob(g, ns, "restore"), backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// The safety net: a Ready Backup of the old data, owning its snapshot.
	safety := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: safetyName(rj)}, safety)).To(Succeed())
	g.Expect(safety.Labels).To(HaveKeyWithValue(backupsv1alpha1.SafetyBackupLabel, "restore"))
	g.Expect(safety.Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
	src, err := artifact.Resolve(safety)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.Key).To(Equal(testPrefix + safety.Name + ".db"))
	snap := &etcdv1alpha2.EtcdSnapshot{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: safety.Name}, snap)).To(Succeed())
	g.Expect(snap.OwnerReferences).To(HaveLen(1))
	g.Expect(snap.OwnerReferences[0].UID).To(Equal(safety.UID))
	g.Expect(len(snap.Name + "-snapshot")).To(BeNumerically("<=", 63))

	// The object was checked before anything was destroyed; the safety
	// Backup is one the driver signed; the outcome was recorded; the
	// capture, no longer needed, is gone.
	verified := condition(rj, backupsv1alpha1.RestoreConditionArtifactVerified)
	g.Expect(verified).NotTo(BeNil())
	g.Expect(verified.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(verified.Message).To(ContainSubstring("integrity trailer intact"))
	v, err := provenance.Verify(ctx, testKeys, safety)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Verified).To(BeTrue())
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionOutcome).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionSpecCaptured).Message).To(ContainSubstring("HelmRelease was NotSuspended"))
	_, err = getCapture(g, rj)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())

	// Observability.
	g.Expect(testutil.ToFloat64(restoresTotal.WithLabelValues("succeeded", string(backupsv1alpha1.ReasonRestoreCompleted)))).
		To(Equal(before + 1))
	g.Eventually(func() []string { return eventReasons(ns) }).WithTimeout(10 * time.Second).
		Should(ContainElement(string(backupsv1alpha1.ReasonRestoreCompleted)))
	// One Event, at the end, tells the story; every step is in the Ready
	// condition and the milestone conditions (SafetyBackup, TargetPurged,
	// EtcdClusterRecreated, RevisionRaised).
	g.Expect(eventReasons(ns)).To(Equal([]string{string(backupsv1alpha1.ReasonRestoreCompleted)}))
	note := eventNotes(ns)[0]
	g.Expect(note).To(ContainSubstring("safety Backup " + ns + "/" + safety.Name))
	g.Expect(note).To(ContainSubstring("were deleted and it was re-created"))
	g.Expect(note).To(ContainSubstring("the revision was raised"))
	for _, c := range []string{backupsv1alpha1.RestoreConditionSafetyBackup, backupsv1alpha1.RestoreConditionPurged,
		backupsv1alpha1.RestoreConditionRecreated, backupsv1alpha1.RestoreConditionRevisionRaised} {
		g.Expect(condition(rj, c)).NotTo(BeNil(), "condition %s", c)
		g.Expect(condition(rj, c).Status).To(Equal(metav1.ConditionTrue), "condition %s", c)
	}
	g.Expect(writes.of(ns)).To(ContainElement("create EtcdCluster with bootstrap"))
	g.Expect(countOf(writes.of(ns), "create EtcdCluster with bootstrap")).To(Equal(1))
	// Past the cache, and only on views caught up with the driver's own
	// writes: the credentials once (before the claim; the check uses what
	// was read) and the cluster to capture (whole, unknown fields
	// included). The staging claim this process made is not read at all:
	// it is known to be this restore's, and is handed to the cluster by
	// its UID. The HelmRelease's state comes from the caught-up view.
	// Before: the credentials twice, the HelmRelease twice, the claim
	// twice (and, earlier, at every step up to the hand-back: 14 times).
	reads := liveReads.of(ns)
	g.Expect(reads).NotTo(ContainElement(HavePrefix("GET PersistentVolumeClaim ")), "live reads: %v", reads)
	g.Expect(countOf(reads, "GET Secret "+testSecret)).To(Equal(1), "live reads: %v", reads)
	g.Expect(countOf(reads, "GET HelmRelease etcd")).To(BeZero(), "live reads: %v", reads)
	g.Expect(len(reads)).To(BeNumerically("<=", 2), "live reads: %v", reads)
}

func eventReasons(ns string) []string {
	var out []string
	for _, e := range jobEvents(ns) {
		out = append(out, e.Reason)
	}
	return out
}

func eventNotes(ns string) []string {
	var out []string
	for _, e := range jobEvents(ns) {
		out = append(out, e.Note)
	}
	return out
}

func jobEvents(ns string) []eventsv1.Event {
	var list eventsv1.EventList
	if err := k.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	return list.Items
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// An admin's suspension is theirs: the restore leaves it in place.
func TestHelmReleaseAlreadySuspendedStaysSuspended(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{hrSuspended: true})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false}`))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue())
	cond := condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(string(backupsv1alpha1.ReasonHelmReleaseLeftSuspended)))
	g.Expect(writes.of(ns)).NotTo(ContainElement(ContainSubstring("HelmRelease")))
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionSafetyBackup).Reason).
		To(Equal(string(backupsv1alpha1.ReasonSafetySnapshotSkipped)))
}

// No HelmRelease: the restore proceeds and says so.
func TestNoHelmRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{noHelmRelease: true})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	cond := condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(string(backupsv1alpha1.ReasonHelmReleaseNotFound)))
	g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal("tenant/etcd/b-aaaaa.db"))
}

// A re-created cluster that never becomes healthy fails at the deadline;
// with rollback declined the claim is released but the HelmRelease stays
// suspended (resumed, Flux would re-create an empty cluster over the
// tenant's data), and the status, an Event and the message say how to
// recover.
func TestClusterNeverAvailable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"restoreTimeoutSeconds":4,"rollback":false}`))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)

	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonDeadlineExceeded)))
	g.Expect(rj.Status.Message).To(ContainSubstring(safetyName(rj)))
	g.Expect(rj.Status.Message).To(ContainSubstring(captureName(rj)))
	g.Expect(rj.Status.Message).To(ContainSubstring("rollback is false"))
	expectKeptSuspended(t, ns, rj)
	g.Expect(claimHolder(g, ns)).To(BeNil())
	_, err := getCapture(g, rj)
	g.Expect(err).NotTo(HaveOccurred(), "a failed restore keeps its capture")
	g.Eventually(func() []string { return eventReasons(ns) }).WithTimeout(10 * time.Second).
		Should(ContainElement(string(backupsv1alpha1.ReasonDeadlineExceeded)))
}

// expectKeptSuspended checks the hand-back of a restore that ended after
// the purge without a healthy cluster: the HelmRelease it suspended is
// still suspended (and stays so), and the condition, the message and a
// Warning Event say how to recover.
func expectKeptSuspended(t *testing.T, ns string, rj *backupsv1alpha1.RestoreJob) {
	t.Helper()
	g := NewWithT(t)
	g.Consistently(func(g Gomega) {
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue(), "the HelmRelease stays suspended")
	}).WithTimeout(time.Second).Should(Succeed())
	g.Expect(writes.of(ns)).NotTo(ContainElement("patch HelmRelease suspend=false"))
	cond := condition(rj, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended)))
	for _, msg := range []string{cond.Message, rj.Status.Message} {
		g.Expect(msg).To(ContainSubstring("kept suspended"))
		g.Expect(msg).To(ContainSubstring("runbook.md#restorejob-helmreleasekeptsuspended"))
		g.Expect(msg).To(ContainSubstring(captureName(rj)))
		g.Expect(msg).To(ContainSubstring(`patch helmrelease etcd --type merge -p '{"spec":{"suspend":false}}'`))
	}
	g.Eventually(func() []string { return eventReasons(ns) }).WithTimeout(10 * time.Second).
		Should(ContainElement(string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended)))
}

// Deleting a RestoreJob after the purge does not strand the application:
// the restore finishes the re-create before its finalizer goes.
func TestRestoreJobDeletedAfterPurgeFinishes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue())

	g.Expect(k.Delete(ctx, rj)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(k.Get(ctx, client.ObjectKeyFromObject(rj), &backupsv1alpha1.RestoreJob{})).To(Succeed())
		g.Expect(getHR(g, ns).Spec.Suspend).To(BeTrue())
	}).WithTimeout(2*time.Second).Should(Succeed(), "the job stays until the cluster is back")
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(rj), &backupsv1alpha1.RestoreJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	c := getCluster(g, ns)
	g.Expect(bootstrapKey(c)).To(Equal(testPrefix + "b-aaaaa.db"))
	g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(claimHolder(g, ns)).To(BeNil())
}

// Deleting a RestoreJob before it destroyed anything hands the application
// back untouched.
func TestRestoreJobDeletedBeforePurge(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	old := getCluster(g, ns)
	// A BackupJob snapshot still running (no operator finishes it) holds
	// the restore before it takes its safety snapshot.
	running := runningSnapshot(ns, "nightly-abcde")
	g.Expect(k.Create(ctx, running)).To(Succeed())
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonWaitingForSnapshots)
	g.Expect(k.Delete(ctx, rj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKeyFromObject(rj), &backupsv1alpha1.RestoreJob{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(claimHolder(g, ns)).To(BeNil())
	g.Expect(eventReasons(ns)).To(ContainElement(string(backupsv1alpha1.ReasonRestoreJobDeleted)))
}

// A 200 KiB spec is captured and re-created whole.
func TestLargeCapturedSpec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	big := strings.Repeat("0123456789abcdef", 200*1024/16)
	deployApp(t, ns, appOpts{extra: big})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false}`))).To(Succeed())
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	got, _, _ := unstructured.NestedString(getCluster(g, ns).Object, "spec", "additionalMetadata", "annotations", "extra")
	g.Expect(got).To(HaveLen(len(big)))
	g.Expect(got == big).To(BeTrue())
}

// Two RestoreJobs for one application never interleave: the second waits
// with a visible reason and runs after the first handed the app back.
func TestTwoRestoreJobsSerialise(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b1", "b1-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, ourBackup(ns, "b2", "b2-bbbbb"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "first", "b1", `{"safetySnapshot":false}`))).To(Succeed())
	waitReason(t, ns, "first", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	g.Expect(k.Create(ctx, newRestoreJob(ns, "second", "b2", `{"safetySnapshot":false}`))).To(Succeed())
	second := waitReason(t, ns, "second", backupsv1alpha1.ReasonWaitingForClaim)
	g.Expect(second.Status.Message).To(ContainSubstring("first"))
	g.Consistently(func(g Gomega) {
		g.Expect(getJob(g, ns, "second").Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhasePending))
		g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal("tenant/etcd/b1-aaaaa.db"))
	}).WithTimeout(2 * time.Second).Should(Succeed())

	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	waitPhase(t, ns, "first", backupsv1alpha1.RestoreJobPhaseSucceeded)
	secondDone := waitPhase(t, ns, "second", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal("tenant/etcd/b2-bbbbb.db"))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())

	// Never interleaved: the second job's first write after queueing (its
	// claim) comes after the first job released the claim and resumed the
	// HelmRelease; and the second recorded the HelmRelease as not suspended.
	log := writes.of(ns)
	g.Expect(countOf(log, "create EtcdCluster with bootstrap")).To(Equal(2))
	releaseIdx, secondClaimIdx := indexOf(log, "delete Lease", 0), indexOf(log, "create Lease", 1)
	g.Expect(releaseIdx).To(BeNumerically(">=", 0))
	g.Expect(secondClaimIdx).To(BeNumerically(">", releaseIdx))
	g.Expect(indexOf(log, "patch HelmRelease suspend=false", 0)).To(BeNumerically("<", releaseIdx))
	g.Expect(condition(secondDone, backupsv1alpha1.RestoreConditionSpecCaptured).Message).To(ContainSubstring("HelmRelease was NotSuspended"))
}

// indexOf returns the index of the nth (0-based) occurrence of s, or -1.
func indexOf(list []string, s string, nth int) int {
	for i, x := range list {
		if x == s {
			if nth == 0 {
				return i
			}
			nth--
		}
	}
	return -1
}
