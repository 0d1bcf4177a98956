package backupjob_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// A BackupJob deleted while the operator streams its snapshot to S3 (Plan
// history pruning, or a tenant) goes at once; the snapshot it leaves is
// held, and still recorded as the job's Backup when it completes, so no
// S3 object is left that no Backup names. With the garbage collector
// (which deletes the snapshot of a deleted job; none runs in this suite,
// so the test deletes it as the collector would) the held snapshot is
// recorded all the same and goes once it is.
func TestJobDeletedWhileItsSnapshotRunsDoesNotOrphanTheObject(t *testing.T) {
	for name, collected := range map[string]bool{"snapshot kept": false, "snapshot collected": true} {
		t.Run(name, func(t *testing.T) { jobDeletedMidSnapshot(t, collected) })
	}
}

func jobDeletedMidSnapshot(t *testing.T, collected bool) {
	w := newWorld(t)
	w.everything()
	w.startDriver(nil)
	job := w.job("deleted-mid-snapshot")
	job.Spec.PlanRef = &backupsv1alpha1.LocalObjectReference{Name: "nightly"}
	w.create(job)
	snap := w.awaitSnapshot(job)
	w.g.Expect(snap.Finalizers).To(ContainElement(backupsv1alpha1.SnapshotRecordFinalizer))

	w.g.Expect(env.Client.Delete(w.ctx, job)).To(Succeed())
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(job), &backupsv1alpha1.BackupJob{}))
	}).WithTimeout(10*time.Second).Should(BeTrue(), "the job carries no finalizer")
	if collected {
		w.g.Expect(env.Client.Delete(w.ctx, snap)).To(Succeed())
		w.get(snap)
		w.g.Expect(snap.DeletionTimestamp).NotTo(BeNil())
	}

	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	var b backupsv1alpha1.Backup
	w.g.Eventually(func() error {
		return env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: job.Name}, &b)
	}).WithTimeout(30*time.Second).Should(Succeed(), "no Backup names the snapshot's object")
	w.g.Expect(b.Status.Artifact.URI).To(Equal(snap.Status.Artifact.URI))
	w.g.Expect(b.Spec.ApplicationRef.Name).To(Equal("etcd"))
	w.g.Expect(b.Spec.PlanRef).NotTo(BeNil())
	w.g.Expect(b.Spec.PlanRef.Name).To(Equal("nightly"))
	w.g.Expect(b.Labels).To(HaveKeyWithValue(backupsv1alpha1.OwningJobUIDLabel, string(job.UID)))
	if collected {
		w.g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(snap), &etcdv1alpha2.EtcdSnapshot{}))
		}).WithTimeout(10*time.Second).Should(BeTrue(), "released once recorded")
		return
	}
	w.g.Eventually(func() []string {
		w.get(snap)
		return snap.Finalizers
	}).WithTimeout(10 * time.Second).Should(BeEmpty())
	w.g.Expect(snap.OwnerReferences).To(ConsistOf(HaveField("UID", b.UID)))
}

// A deleted job's snapshot that fails, or never ends, is let go: nothing
// will record it, and it must not be kept for ever.
func TestDeletedJobsSnapshotIsLetGoWhenItFailsOrOutlivesTheDeadline(t *testing.T) {
	// Two tenants: one snapshot of a cluster runs at a time.
	w, other := newWorld(t), newWorld(t)
	w.everything()
	other.everything()
	w.startDriver(func(o *manager.Options) { o.BackupDeadline = 4 * time.Second })
	failing, hung := w.job("fails-after-delete"), other.job("hangs-after-delete")
	w.create(failing)
	other.create(hung)
	failSnap, hungSnap := w.awaitSnapshot(failing), other.awaitSnapshot(hung)
	w.g.Expect(env.Client.Delete(w.ctx, failing)).To(Succeed())
	w.g.Expect(env.Client.Delete(w.ctx, hung)).To(Succeed())
	w.operatorFinishes(failSnap, etcdv1alpha2.SnapshotPhaseFailed)

	released := func(s *etcdv1alpha2.EtcdSnapshot) func() []string {
		return func() []string { w.get(s); return s.Finalizers }
	}
	w.g.Eventually(released(failSnap)).WithTimeout(10 * time.Second).Should(BeEmpty())
	w.g.Expect(released(hungSnap)()).To(ContainElement(backupsv1alpha1.SnapshotRecordFinalizer), "held within the deadline")
	w.g.Eventually(released(hungSnap)).WithTimeout(15 * time.Second).Should(BeEmpty())
	w.g.Eventually(func() []string { return other.eventReasons(hungSnap) }).Should(ContainElement(backupsv1alpha1.BackupReasonDeadlineExceeded))
	for _, j := range []*backupsv1alpha1.BackupJob{failing, hung} {
		w.g.Expect(apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(j), &backupsv1alpha1.Backup{}))).To(BeTrue())
	}
}

// The driver dies after the Backup is created and before the hand-over
// (which also lets go of the snapshot), then after the hand-over and before
// the job's status: each time the next run adopts its own Backup and ends
// with exactly one Backup and the snapshot handed to it, even with the
// job's class deleted in between.
func TestCrashAroundTheHandOverEndsWithOneBackup(t *testing.T) {
	for name, failHandOver := range map[string]bool{"before the hand-over": true, "before the status write": false} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.everything()
			job := w.job("crash-at-hand-over")
			var crashed atomic.Bool
			firstCtx, stopFirst := context.WithCancel(context.Background())
			w.startDriverCtx(firstCtx, func(o *manager.Options) {
				o.WrapClient = func(c client.Client) client.Client {
					return wrap(c, interceptor.Funcs{
						Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
							// (Only this test's namespace: the driver also
							// reconciles what earlier tests left.)
							if _, ok := obj.(*etcdv1alpha2.EtcdSnapshot); ok && obj.GetNamespace() == w.ns && (failHandOver || crashed.Load()) {
								crashed.Store(true)
								return errCrash
							}
							return c.Patch(ctx, obj, patch, opts...)
						},
						SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
							if _, ok := obj.(*backupsv1alpha1.BackupJob); ok && obj.GetNamespace() == w.ns && !failHandOver {
								crashed.Store(true)
								return errCrash
							}
							if crashed.Load() && obj.GetNamespace() == w.ns {
								return errCrash
							}
							return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
						},
					})
				}
			})
			w.create(job)
			snap := w.awaitSnapshot(job)
			w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
			w.g.Eventually(crashed.Load).WithTimeout(30 * time.Second).Should(BeTrue())
			stopFirst()
			w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: job.Name}, &backupsv1alpha1.Backup{})).To(Succeed())
			w.get(snap)
			if failHandOver {
				w.g.Expect(snap.Finalizers).To(ContainElement(backupsv1alpha1.SnapshotRecordFinalizer), "the crash came before the hand-over")
			} else {
				w.g.Expect(snap.Finalizers).To(BeEmpty(), "the crash came after the hand-over")
			}

			// Meanwhile the job's class goes: a job whose snapshot exists
			// finishes without it (after the hand-over the snapshot is
			// history, out of the cache, and only a live read finds it).
			w.g.Expect(env.Client.Delete(w.ctx, w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"))).To(Succeed())

			w.startDriver(nil)
			w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
			var backups backupsv1alpha1.BackupList
			w.g.Expect(env.Client.List(w.ctx, &backups, client.InNamespace(w.ns))).To(Succeed())
			w.g.Expect(backups.Items).To(HaveLen(1))
			w.get(snap)
			w.g.Expect(snap.Finalizers).To(BeEmpty())
			w.g.Expect(snap.OwnerReferences).To(ConsistOf(HaveField("UID", backups.Items[0].UID)))
			w.g.Expect(w.snapshotsOf(job)).To(HaveLen(1))
		})
	}
}
