package plankeeper

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
)

var epoch = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// bk is a Backup taken hour hours after epoch; tests look at it from epoch+100h.
func bk(name string, hour int, phase backupsv1alpha1.BackupPhase) backupsv1alpha1.Backup {
	return backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       backupsv1alpha1.BackupSpec{TakenAt: metav1.NewTime(epoch.Add(time.Duration(hour) * time.Hour))},
		Status:     backupsv1alpha1.BackupStatus{Phase: phase},
	}
}

func pruned(ps []Prune) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Backup.Name+":"+string(p.Reason))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestBackupsToPrune(t *testing.T) {
	ready, failed, pending := backupsv1alpha1.BackupPhaseReady, backupsv1alpha1.BackupPhaseFailed, backupsv1alpha1.BackupPhasePending
	clk := clocktesting.NewFakeClock(epoch.Add(100 * time.Hour))
	deleting := bk("b0", 0, ready)
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
	inspected := bk("b2", 2, ready)
	inspected.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionTrue, Reason: "Inspected"}}
	held := bk("b1", 1, ready)
	held.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b2"}

	for name, tc := range map[string]struct {
		backups []backupsv1alpha1.Backup
		ret     planpolicy.Retention
		inUse   map[string]bool
		want    string
	}{
		"no retention": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b2", 2, ready)},
			want:    "",
		},
		"keepLast keeps the newest": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b3", 3, ready), bk("b2", 2, ready), bk("b4", 4, ready)},
			ret:     planpolicy.Retention{KeepLast: 2},
			want:    "b1:KeepLast b2:KeepLast",
		},
		"a Backup held for a content drop is kept past keepLast and maxAge": {
			backups: []backupsv1alpha1.Backup{held, bk("b2", 2, ready), bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     planpolicy.Retention{KeepLast: 1, MaxAge: 48 * time.Hour},
			want:    "b2:KeepLast b3:KeepLast",
		},
		"the newest inspected Backup is kept while newer ones are being inspected": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), inspected, bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     planpolicy.Retention{KeepLast: 1},
			want:    "b1:KeepLast b3:KeepLast",
		},
		"maxAge": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b60", 60, ready), bk("b99", 99, ready)},
			ret:     planpolicy.Retention{MaxAge: 48 * time.Hour},
			want:    "b1:MaxAge",
		},
		"both rules": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b90", 90, ready), bk("b95", 95, ready), bk("b99", 99, ready)},
			ret:     planpolicy.Retention{KeepLast: 3, MaxAge: 48 * time.Hour},
			want:    "b1:KeepLast",
		},
		"the newest Ready survives both rules": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b97", 97, failed), bk("b98", 98, failed), bk("b99", 99, failed)},
			ret:     planpolicy.Retention{KeepLast: 1, MaxAge: time.Hour},
			want:    "b97:KeepLast b98:KeepLast",
		},
		"in-use Backups are kept": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b2", 2, ready), bk("b3", 3, ready)},
			ret:     planpolicy.Retention{KeepLast: 1},
			inUse:   map[string]bool{"b1": true},
			want:    "b2:KeepLast",
		},
		"pending and unknown phases are kept, deleting ones ignored": {
			backups: []backupsv1alpha1.Backup{deleting, bk("b1", 1, pending), bk("b2", 2, ""), bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     planpolicy.Retention{KeepLast: 1},
			want:    "b3:KeepLast",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := pruned(BackupsToPrune(tc.backups, tc.ret, tc.inUse, clk.Now())); got != tc.want {
				t.Fatalf("pruned %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewestReady(t *testing.T) {
	bs := []backupsv1alpha1.Backup{bk("b1", 1, backupsv1alpha1.BackupPhaseReady), bk("b3", 3, backupsv1alpha1.BackupPhaseFailed), bk("b2", 2, backupsv1alpha1.BackupPhaseReady)}
	if got := NewestReady(bs); got != "b2" {
		t.Fatalf("NewestReady = %q", got)
	}
	if got := NewestReady(nil); got != "" {
		t.Fatalf("NewestReady(nil) = %q", got)
	}
}

// Retention keeps the newest Backups, never the one a RestoreJob is using
// and never the newest Ready one, and releases a Backup once its restore
// finishes.
func TestRetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep", "@yearly", keepLast("2"))
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	ready, failed := backupsv1alpha1.BackupPhaseReady, backupsv1alpha1.BackupPhaseFailed
	createBackup(g, ns, "b1", "keep", now.Add(-5*time.Hour), ready)
	createBackup(g, ns, "b2", "keep", now.Add(-4*time.Hour), ready)
	createBackup(g, ns, "b3", "keep", now.Add(-3*time.Hour), ready)
	createBackup(g, ns, "b4", "keep", now.Add(-2*time.Hour), failed)
	createBackup(g, ns, "b5", "keep", now.Add(-1*time.Hour), failed)
	createBackup(g, ns, "other", "another-plan", now.Add(-9*time.Hour), ready)

	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "b1"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	// b4, b5: newest two; b3: newest Ready; b1: in use; other: not this Plan's.
	g.Expect(backupNames(g, ns)).To(ConsistOf("b1", "b3", "b4", "b5", "other"))
	g.Expect(record(g, p).LastSuccessfulBackup).To(Equal("b3"))

	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("b3", "b4", "b5", "other"))
	g.Expect(containing(h.events(), reasonBackupPruned)).To(HaveLen(2))
}

// A restore that failed after it deleted the cluster, without putting it
// back, still reads its Backup: it is the data to restore again, so
// retention keeps it until a person ends the restore by deleting the
// RestoreJob.
func TestRetentionKeepsTheBackupOfAFailedRestoreNeedingAHand(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep1h", "@yearly", keepLast("1"))
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	createBackup(g, ns, "old", "keep1h", now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
	createBackup(g, ns, "new", "keep1h", now.Add(-1*time.Hour), backupsv1alpha1.BackupPhaseReady)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "old"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	t0 := metav1.Now()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	rj.Status.Conditions = []metav1.Condition{
		{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(backupsv1alpha1.ReasonRollbackFailed), Message: "m", LastTransitionTime: t0},
		{Type: backupsv1alpha1.RestoreConditionPurged, Status: metav1.ConditionTrue, Reason: string(backupsv1alpha1.ReasonClusterPurged), Message: "m", LastTransitionTime: t0},
		{Type: backupsv1alpha1.RestoreConditionRollback, Status: metav1.ConditionTrue, Reason: string(backupsv1alpha1.ReasonBootstrapFailed), Message: "m", LastTransitionTime: t0},
	}
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("old", "new"), "the Backup a failed restore may be redone from was pruned")

	g.Expect(env.Client.Delete(ctx, rj)).To(Succeed())
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("new"))
}

// staleCache hides every RestoreJob, as a cache that has not yet seen a
// RestoreJob created a moment ago would.
type staleCache struct{ client.Client }

func (c staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*backupsv1alpha1.RestoreJobList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// Retention confirms with the API server that no restore reads a Backup
// before deleting it, whatever the cache says.
func TestRetentionDoesNotTrustTheCacheAboutRestores(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep1", "@yearly", keepLast("1"))
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	createBackup(g, ns, "old", "keep1", now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
	createBackup(g, ns, "new", "keep1", now.Add(-1*time.Hour), backupsv1alpha1.BackupPhaseReady)
	g.Expect(env.Client.Create(ctx, &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "just-created"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "old"}},
	})).To(Succeed())

	h := newHarness(now)
	h.r.Client = staleCache{env.Client}
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("old", "new"))
}

// A tenant's hand-written Backup with the Plan's labels and a time far in
// the future neither pushes real Backups out of keepLast nor is pruned: it
// is not the driver's, so retention does not see it.
func TestRetentionIgnoresForgedBackups(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep2", "@yearly", keepLast("2"))
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	ready := backupsv1alpha1.BackupPhaseReady
	createBackup(g, ns, "real-1", "keep2", now.Add(-2*time.Hour), ready)
	createBackup(g, ns, "real-2", "keep2", now.Add(-1*time.Hour), ready)
	planBackup(g, ns, "forged-1", "keep2", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), ready, true)
	planBackup(g, ns, "forged-2", "keep2", time.Date(2099, 1, 2, 0, 0, 0, 0, time.UTC), ready, true)
	// A real Backup edited to look newer is no longer verified either.
	edited := planBackup(g, ns, "edited", "keep2", now.Add(-3*time.Hour), ready, false)
	edited.Spec.TakenAt = metav1.NewTime(time.Date(2099, 1, 3, 0, 0, 0, 0, time.UTC))
	g.Expect(env.Client.Update(context.Background(), edited)).To(Succeed())

	h := newHarness(now)
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("real-1", "real-2", "forged-1", "forged-2", "edited"))
	g.Expect(record(g, p).LastSuccessfulBackup).To(Equal("real-2"))
}

// A restore to a point reads the base it pinned, whatever its backupRef
// names: retention keeps that base while the restore runs.
func TestRetentionKeepsTheBaseOfARestoreToAPoint(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "keep1", "@yearly", keepLast("1"))
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	createBackup(g, ns, "base", "keep1", now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
	createBackup(g, ns, "newest", "keep1", now.Add(-1*time.Hour), backupsv1alpha1.BackupPhaseReady)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-a-point"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "newest"}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	pin, err := pointintime.EncodePin(ctx, testKeys, rj, pointintime.Pin{Point: "2026-12-07T05:00:00Z", Backup: "base", Chain: ns + "/etcd/changes/10"})
	g.Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(rj.DeepCopy())
	rj.Annotations = map[string]string{pointintime.PinAnnotation: pin}
	g.Expect(env.Client.Patch(ctx, rj, patch)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())

	h := newHarness(now)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("base", "newest"), "the base of a running restore to a point was pruned")
}
