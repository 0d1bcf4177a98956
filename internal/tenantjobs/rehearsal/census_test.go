package rehearsal

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
)

// endOrRecount waits until the dry run ends or the driver counts the live
// cluster a second time, and returns the RestoreJob.
func endOrRecount(t *testing.T, ns, name string) *backupsv1alpha1.RestoreJob {
	t.Helper()
	rj := &backupsv1alpha1.RestoreJob{}
	NewWithT(t).Eventually(func() bool {
		_ = k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj)
		return rj.Status.Phase.IsTerminal() || censusesOf(ns) > 1
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(BeTrue())
	return rj
}

// On Cozystack's RestoreJob CRD (every suite installs it as pinned), a
// dry run records its start where that CRD lets it and ends after one
// census of the live cluster: its start is not lost to pruning and
// counted again on every reconcile.
func TestADryRunCountsTheLiveClusterOnce(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	create(t, dryRun(ns, "rehearse", "nightly"))
	rj := endOrRecount(t, ns, "rehearse")
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live cluster")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	g.Expect(reportOf(t, rj).NamespacesReturning).To(BeEmpty())
	g.Expect(rj.Status.Message).To(ContainSubstring("no object counts change"))
}

// refusingRecords are namespaces whose RestoreJobs' metadata the API
// server refuses to change (as an admission webhook of the platform
// might): the driver's record cannot be written there.
var refusingRecords sync.Map

// recordFaults is the driver's client, failing every metadata patch of a
// RestoreJob in refusingRecords (status writes go through).
type recordFaults struct{ client.Client }

func (c recordFaults) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, refuse := refusingRecords.Load(obj.GetNamespace()); refuse {
		if _, ok := obj.(*backupsv1alpha1.RestoreJob); ok {
			return apierrors.NewForbidden(schema.GroupResource{Group: backupsv1alpha1.GroupVersion.Group, Resource: "restorejobs"},
				obj.GetName(), errors.New("metadata is frozen here"))
		}
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A dry run whose start cannot be recorded ends with the reason after one
// census, and starts no Job (it would not know its floor again).
func TestADryRunThatCannotRecordItsStartEnds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	refusingRecords.Store(ns, true)
	deployApp(t, ns)
	cli := liveEtcd(t, ns)
	b, _ := backupOf(t, ns, "nightly", cli)
	create(t, b)
	create(t, dryRun(ns, "rehearse", "nightly"))
	rj := endOrRecount(t, ns, "rehearse")
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live cluster")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed), rj.Status.Message)
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsalUnrecorded)))
	g.Expect(rj.Status.Message).To(ContainSubstring("metadata is frozen here"))
	g.Expect(rj.Status.Message).To(ContainSubstring("create the dry run again"))
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
}

// A tenant rewrites the record while the Job runs (a lower revision
// floor, as its own): the driver does not believe it. While it holds what
// it counted it writes its record again; once it no longer does (a
// restart), it ends the dry run with the reason. It never counts the
// live cluster again.
func TestATamperedRecordEndsTheDryRun(t *testing.T) {
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
	raw := rj.Annotations[rehearsalrecord.Annotation]
	g.Expect(raw).To(ContainSubstring(`"revisionBefore":`))
	forged := regexp.MustCompile(`"revisionBefore":\d+`).ReplaceAllString(raw, `"revisionBefore":1`)
	rj.Annotations[rehearsalrecord.Annotation] = forged
	g.Expect(k.Update(ctx, rj)).To(Succeed())
	g.Eventually(func() string {
		_ = k.Get(ctx, client.ObjectKeyFromObject(rj), rj)
		return rj.Annotations[rehearsalrecord.Annotation]
	}).WithTimeout(30*time.Second).Should(Equal(raw), "the driver's record written again")

	// After a restart the driver holds nothing to write it again from.
	testReconciler.forget(rj)
	rj.Annotations[rehearsalrecord.Annotation] = forged
	g.Expect(k.Update(ctx, rj)).To(Succeed())

	rj = endOrRecount(t, ns, "rehearse")
	g.Expect(censusesOf(ns)).To(Equal(int32(1)), "censuses of the live cluster")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed), rj.Status.Message)
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsalUnrecorded)))
	g.Expect(rj.Status.Message).To(ContainSubstring("not the driver's"))
}

// The provenance key rotates while the rehearsal Job runs: the Job's
// keyed name changes with the key, but the driver that made the Job
// follows the Job it made instead of taking it for deleted.
func TestAKeyRotationDoesNotLoseTheJob(t *testing.T) {
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
	driverKeys.rotated.Store(true)
	t.Cleanup(func() { driverKeys.rotated.Store(false) })
	// Wake the dry run under the new key, then let the Job run.
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, rj)).To(Succeed())
	rj.Labels = map[string]string{"woken": "yes"}
	g.Expect(k.Update(ctx, rj)).To(Succeed())
	held.Delete(ns)

	rj = endOrRecount(t, ns, "rehearse")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1), "no second Job")
}
