package goodbackup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

func backup(name string, minute int, conds ...metav1.Condition) backupsv1alpha1.Backup {
	return backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   backupsv1alpha1.BackupSpec{TakenAt: metav1.NewTime(time.Date(2026, 1, 1, 3, minute, 0, 0, time.UTC))},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, Conditions: conds}}
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

// A good Backup is Ready, not being deleted, verified, not failed
// inspection and not ContentDrop; a sound one may be ContentDrop.
func TestGoodAndSound(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name        string
		b           backupsv1alpha1.Backup
		verified    bool
		sound, good bool
	}{
		{"ready and verified", backup("a", 0), true, true, true},
		{"not verified", backup("a", 0), false, false, false},
		{"inspection pending", backup("a", 0, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending)), true, true, true},
		{"inspection disabled", backup("a", 0, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionDisabled)), true, true, true},
		{"inspection failed", backup("a", 0, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionFailed)), true, false, false},
		{"inspection refused", backup("a", 0, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionRefused)), true, false, false},
		{"the inspector failing (retrying)", backup("a", 0, cond(backupsv1alpha1.BackupConditionInspected, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionRetrying)), true, true, true},
		{"content dropped", backup("a", 0, cond(backupsv1alpha1.BackupConditionContentDrop, metav1.ConditionTrue, backupsv1alpha1.BackupReasonContentDropped)), true, true, false},
		{"content kept", backup("a", 0, cond(backupsv1alpha1.BackupConditionContentDrop, metav1.ConditionFalse, backupsv1alpha1.BackupReasonContentUnchanged)), true, true, true},
		{"pending", func() backupsv1alpha1.Backup {
			b := backup("a", 0)
			b.Status.Phase = backupsv1alpha1.BackupPhasePending
			return b
		}(), true, false, false},
		{"being deleted", func() backupsv1alpha1.Backup { b := backup("a", 0); b.DeletionTimestamp = &now; return b }(), true, false, false},
	} {
		if got := Sound(&tc.b, tc.verified); got != tc.sound {
			t.Errorf("%s: Sound = %v", tc.name, got)
		}
		if got := Good(&tc.b, tc.verified); got != tc.good {
			t.Errorf("%s: Good = %v", tc.name, got)
		}
	}
}

// The CLI takes a Backup the driver has not marked unverified.
func TestShownVerified(t *testing.T) {
	unjudged, ok, refused := backup("a", 0), backup("b", 0, cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue, "ProvenanceVerified")),
		backup("c", 0, cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionFalse, "Unverified"))
	if !ShownVerified(&unjudged) || !ShownVerified(&ok) || ShownVerified(&refused) {
		t.Fatal("ShownVerified takes an unjudged or verified Backup, never one marked unverified")
	}
}

// Newest picks by spec.takenAt, then by name, whatever the list's order.
func TestNewest(t *testing.T) {
	list := []backupsv1alpha1.Backup{backup("b", 5), backup("z", 1), backup("a", 5), backup("dropped", 9,
		cond(backupsv1alpha1.BackupConditionContentDrop, metav1.ConditionTrue, backupsv1alpha1.BackupReasonContentDropped))}
	good := func(b *backupsv1alpha1.Backup) bool { return Good(b, true) }
	if got := Newest(list, good); got == nil || got.Name != "b" {
		t.Fatalf("newest good %v, want b (taken with a, and after it by name)", got)
	}
	if got := Newest(list, func(*backupsv1alpha1.Backup) bool { return false }); got != nil {
		t.Fatalf("newest of none: %v", got.Name)
	}
}
