package backupjob_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// The whole driver (its scheduler on a fake clock): a Plan starts
// BackupJobs, the backup path
// turns them into Backups of the Plan, the Plan reports the newest one and
// its retention deletes the older one, whose finalizer then tries to delete
// its object (policy Delete) and reports the missing credentials instead
// of letting the Backup go.
func TestPlanDrivesBackupsAndRetention(t *testing.T) {
	w := newWorld(t)
	w.everything()
	clk := clocktesting.NewFakeClock(time.Now())
	w.startDriver(func(o *manager.Options) { o.Clock = clk })

	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "frequent",
			Annotations: map[string]string{planpolicy.RetentionKeepLast: "1"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: w.class,
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: "* * * * *"},
		},
	}
	w.create(plan)

	// Each run: move the clock to the next minute and nudge the Plan (rather
	// than wait out its real-time requeue), then play the operator.
	w.get(plan)
	runAt := plan.CreationTimestamp.Time
	nudges := 0
	finishNextJob := func(done map[string]bool) string {
		runAt = runAt.Truncate(time.Minute).Add(time.Minute)
		clk.SetTime(runAt.Add(5 * time.Second))
		nudges++
		nudge := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"test/nudge":"%d"}}}`, nudges))
		w.g.Expect(env.Client.Patch(w.ctx, plan, nudge)).To(Succeed())
		var job *backupsv1alpha1.BackupJob
		w.g.Eventually(func() bool {
			var list backupsv1alpha1.BackupJobList
			w.g.Expect(env.Client.List(w.ctx, &list, client.InNamespace(w.ns),
				client.MatchingLabels{backupsv1alpha1.PlanNameLabel: plan.Name})).To(Succeed())
			for i := range list.Items {
				if !done[list.Items[i].Name] {
					job = &list.Items[i]
					return true
				}
			}
			return false
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		w.g.Expect(job.Spec.PlanRef.Name).To(Equal(plan.Name))
		w.operatorFinishes(w.awaitSnapshot(job), etcdv1alpha2.SnapshotPhaseComplete)
		w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
		done[job.Name] = true
		return job.Name
	}
	done := map[string]bool{}
	first := finishNextJob(done)

	backup := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: first}}
	w.get(backup)
	w.g.Expect(backup.Labels).To(HaveKeyWithValue(backupsv1alpha1.PlanNameLabel, plan.Name))
	w.g.Expect(backup.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer))
	w.g.Eventually(func() string { return lastSuccessfulBackup(w, plan) }).WithTimeout(30 * time.Second).Should(Equal(first))

	second := finishNextJob(done)
	w.g.Eventually(func() string { return lastSuccessfulBackup(w, plan) }).WithTimeout(30 * time.Second).Should(Equal(second))

	// Retention deleted the first Backup; with policy Delete and no Secret
	// it is released keeping its object, and an Event says so.
	w.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, client.ObjectKeyFromObject(backup), &backupsv1alpha1.Backup{}))
	}).WithTimeout(30 * time.Second).Should(BeTrue())
	w.g.Eventually(func() []string { return w.eventReasons(backup) }).WithTimeout(10 * time.Second).
		Should(ContainElement(backupsv1alpha1.BackupReasonObjectKeptCredentialsGone))
	w.g.Expect(w.get(&backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: second}}).GetDeletionTimestamp()).To(BeNil())
}

// lastSuccessfulBackup is what the driver's record on plan says.
func lastSuccessfulBackup(w *world, plan *backupsv1alpha1.Plan) string {
	w.get(plan)
	rec, _ := planrecord.Peek(plan)
	return rec.LastSuccessfulBackup
}
