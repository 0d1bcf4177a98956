package plan

import (
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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
	held.Annotations = map[string]string{backupsv1alpha1.ContentDropHoldAnnotation: "b2"}

	for name, tc := range map[string]struct {
		backups []backupsv1alpha1.Backup
		ret     *backupsv1alpha1.PlanRetention
		inUse   map[string]bool
		want    string
	}{
		"no retention": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b2", 2, ready)},
			want:    "",
		},
		"keepLast keeps the newest": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b3", 3, ready), bk("b2", 2, ready), bk("b4", 4, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](2)},
			want:    "b1:KeepLast b2:KeepLast",
		},
		"a Backup held for a content drop is kept past keepLast and maxAge": {
			backups: []backupsv1alpha1.Backup{held, bk("b2", 2, ready), bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1), MaxAge: &metav1.Duration{Duration: 48 * time.Hour}},
			want:    "b2:KeepLast b3:KeepLast",
		},
		"the newest inspected Backup is kept while newer ones are being inspected": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), inspected, bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1)},
			want:    "b1:KeepLast b3:KeepLast",
		},
		"maxAge": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b60", 60, ready), bk("b99", 99, ready)},
			ret:     &backupsv1alpha1.PlanRetention{MaxAge: &metav1.Duration{Duration: 48 * time.Hour}},
			want:    "b1:MaxAge",
		},
		"both rules": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b90", 90, ready), bk("b95", 95, ready), bk("b99", 99, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](3), MaxAge: &metav1.Duration{Duration: 48 * time.Hour}},
			want:    "b1:KeepLast",
		},
		"the newest Ready survives both rules": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b97", 97, failed), bk("b98", 98, failed), bk("b99", 99, failed)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1), MaxAge: &metav1.Duration{Duration: time.Hour}},
			want:    "b97:KeepLast b98:KeepLast",
		},
		"in-use Backups are kept": {
			backups: []backupsv1alpha1.Backup{bk("b1", 1, ready), bk("b2", 2, ready), bk("b3", 3, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1)},
			inUse:   map[string]bool{"b1": true},
			want:    "b2:KeepLast",
		},
		"pending and unknown phases are kept, deleting ones ignored": {
			backups: []backupsv1alpha1.Backup{deleting, bk("b1", 1, pending), bk("b2", 2, ""), bk("b3", 3, ready), bk("b4", 4, ready)},
			ret:     &backupsv1alpha1.PlanRetention{KeepLast: ptr.To[int32](1)},
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

func job(name string, hour int, phase backupsv1alpha1.BackupJobPhase) backupsv1alpha1.BackupJob {
	return backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ScheduledAtAnnotation: epoch.Add(time.Duration(hour) * time.Hour).Format(time.RFC3339),
		}},
		Status: backupsv1alpha1.BackupJobStatus{Phase: phase},
	}
}

func TestJobsToPrune(t *testing.T) {
	ok, bad, run := backupsv1alpha1.BackupJobPhaseSucceeded, backupsv1alpha1.BackupJobPhaseFailed, backupsv1alpha1.BackupJobPhaseRunning
	jobs := []backupsv1alpha1.BackupJob{
		job("s1", 1, ok), job("s5", 5, ok), job("s3", 3, ok), job("s4", 4, ok), job("s2", 2, ok),
		job("f1", 1, bad), job("f3", 3, bad), job("f2", 2, bad),
		job("r0", 0, run), job("p0", 0, ""),
	}
	var got []string
	for _, j := range JobsToPrune(jobs, 3, 1) {
		got = append(got, j.Name)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != "f1 f2 s1 s2" {
		t.Fatalf("pruned %v, want f1 f2 s1 s2", got)
	}
	if n := len(JobsToPrune(jobs, 0, 0)); n != 8 {
		t.Fatalf("limits of 0 prune every finished job, got %d", n)
	}
}
