package rehearsal

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// signedBackup is a Ready Backup of ns signed as the driver signs it, of
// an object no one reads: the test plays its rehearsal Jobs.
func signedBackup(t *testing.T, ns, name string) *backupsv1alpha1.Backup {
	t.Helper()
	fps := true
	rec := artifact.Record{SnapshotName: name + "-snap", EtcdVersion: "3.6.11", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: testBucket, Endpoint: testEndpoint, Key: testPrefix + ns + "/", ForcePathStyle: &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret}}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	g, sg := backupsv1alpha1.DefaultApplicationAPIGroup, strategyv1alpha1.GroupVersion.Group
	data := []byte("a snapshot no one reads: the test plays the rehearsal Job")
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: "Etcd", Name: clusterName},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &sg, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"},
			TakenAt:        metav1.Now(), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI(testBucket, artifact.ObjectKey(testPrefix+ns+"/", name+"-snap")),
				SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}},
	}
	if err := provenance.Seal(context.Background(), testKeys, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// tenantWithBackup is a namespace with its application and a Backup
// "nightly", whose rehearsal Jobs the test runs itself (held).
func tenantWithBackup(t *testing.T, ns string) {
	t.Helper()
	if ns == "" {
		ns = newNamespace(t)
	}
	held.Store(ns, true)
	t.Cleanup(func() { held.Delete(ns) })
	deployApp(t, ns)
	create(t, signedBackup(t, ns, "nightly"))
}

// withCaps runs the test's rehearsals under these bounds, on top of the
// dry runs other tests left running.
func withCaps(t *testing.T, total, perNamespace int) {
	t.Helper()
	running := 0
	var list backupsv1alpha1.RestoreJobList
	if err := k.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		rj := &list.Items[i]
		if started, ok := restoreoptions.StartedAs(rj, false); ok && started == restoreoptions.DryRun && !rj.Status.Phase.IsTerminal() {
			running++
		}
	}
	testReconciler.setCaps(running+total, perNamespace)
	t.Cleanup(func() { testReconciler.setCaps(0, 0) })
}

// jobOf is the rehearsal Job of dry run ns/name, or nil.
func jobOf(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	rj := &backupsv1alpha1.RestoreJob{}
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj); err != nil {
		t.Fatal(err)
	}
	var jobs batchv1.JobList
	if err := k.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.RehearsalLabel: string(rj.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) == 0 {
		return nil
	}
	return &jobs.Items[0]
}

// rehearsed is the report of a rehearsal that booted and read back.
var rehearsed = step.Report{Envelope: report.Envelope{Outcome: step.OutcomeRehearsed, Reason: step.ReasonRehearsed},
	Revision: 1_000_000_010, CompactedRevision: 1_000_000_010, Keys: 3}.Line()

// awaitJob waits for the rehearsal Job of dry run ns/name and returns it.
func awaitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	NewWithT(t).Eventually(func() *batchv1.Job { j = jobOf(t, ns, name); return j }).WithTimeout(time.Minute).ShouldNot(BeNil(), ns+"/"+name)
	return j
}

// awaitQueued waits for dry run ns/name to be queued and returns its
// Ready condition's message; a queued dry run has no Job.
func awaitQueued(t *testing.T, ns, name string) string {
	t.Helper()
	g := NewWithT(t)
	rj := &backupsv1alpha1.RestoreJob{}
	g.Eventually(func() string {
		g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
		return readyOf(rj).Reason
	}).WithTimeout(time.Minute).Should(Equal(string(backupsv1alpha1.ReasonRehearsalQueued)), ns+"/"+name)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhasePending))
	g.Expect(jobOf(t, ns, name)).To(BeNil(), "a queued dry run has no Job")
	return readyOf(rj).Message
}

// Rehearsals wait for a slot: at most --max-rehearsal-jobs run at once,
// and --max-rehearsal-jobs-per-namespace of one namespace. A dry run
// beyond them is queued (Pending, RehearsalQueued, the bound named) and
// starts, oldest first among those whose namespace has room, when one
// ends: a tenant's third dry run waits behind its first two while
// another tenant's runs.
func TestRehearsalsWaitForASlotOldestFirst(t *testing.T) {
	g := NewWithT(t)
	a, b, c := newNamespace(t), newNamespace(t), newNamespace(t)
	for _, ns := range []string{a, b, c} {
		tenantWithBackup(t, ns)
	}
	withCaps(t, 2, 1)
	for _, name := range []string{"a1", "a2", "a3"} {
		create(t, dryRun(a, name, "nightly"))
	}
	// Creation times are in seconds: the queue's order is theirs.
	time.Sleep(1100 * time.Millisecond)
	create(t, dryRun(b, "b1", "nightly"))
	time.Sleep(1100 * time.Millisecond)
	create(t, dryRun(c, "c1", "nightly"))

	a1, b1 := awaitJob(t, a, "a1"), awaitJob(t, b, "b1")
	g.Expect(awaitQueued(t, a, "a2")).To(ContainSubstring("--max-rehearsal-jobs-per-namespace"))
	g.Expect(awaitQueued(t, a, "a3")).To(ContainSubstring("--max-rehearsal-jobs-per-namespace"))
	g.Expect(awaitQueued(t, c, "c1")).To(ContainSubstring("at most 2 run at once (--max-rehearsal-jobs)"))

	// a1 ends: a2, the oldest whose namespace has room, takes its slot.
	finishJob(context.Background(), a1, 0, rehearsed)
	a2 := awaitJob(t, a, "a2")
	g.Expect(jobOf(t, c, "c1")).To(BeNil())
	g.Expect(awaitQueued(t, a, "a3")).To(ContainSubstring("--max-rehearsal-jobs-per-namespace"))
	// b1 ends: c1 (a3 still waits behind a2).
	finishJob(context.Background(), b1, 0, rehearsed)
	c1 := awaitJob(t, c, "c1")
	g.Expect(awaitQueued(t, a, "a3")).To(ContainSubstring("--max-rehearsal-jobs-per-namespace"))
	finishJob(context.Background(), a2, 0, rehearsed)
	finishJob(context.Background(), c1, 0, rehearsed)
	finishJob(context.Background(), awaitJob(t, a, "a3"), 0, rehearsed)
	for _, nn := range [][2]string{{a, "a1"}, {a, "a2"}, {a, "a3"}, {b, "b1"}, {c, "c1"}} {
		rj := waitEnd(t, nn[0], nn[1])
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s/%s: %s", nn[0], nn[1], rj.Status.Message)
	}
}

// Only the dry runs this driver can start are in its queue: an
// older dry run another driver rehearses (a Backup of another strategy)
// or one still waiting for its Backup takes no slot.
func TestDryRunsThatCannotStartTakeNoPlaceInTheQueue(t *testing.T) {
	g := NewWithT(t)
	other, ours := newNamespace(t), newNamespace(t)
	tenantWithBackup(t, ours)
	held.Store(other, true)
	t.Cleanup(func() { held.Delete(other) })
	foreign := signedBackup(t, other, "cnpg")
	foreign.Spec.StrategyRef.Kind = "CNPG"
	create(t, foreign)
	withCaps(t, 1, 0)
	create(t, dryRun(other, "foreign", "cnpg"))
	create(t, dryRun(other, "no-backup-yet", "later"))
	time.Sleep(1100 * time.Millisecond)
	create(t, dryRun(ours, "mine", "nightly"))
	finishJob(context.Background(), awaitJob(t, ours, "mine"), 0, rehearsed)
	rj := waitEnd(t, ours, "mine")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
}
