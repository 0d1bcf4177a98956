package ebdctl

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Terminal escapes a tenant can write: a clear screen, a window title
// (ended by a bell).
const escapes = "\x1b[2J\x1b]0;owned\x07"

// show prints what a tenant wrote on its Backup (applicationRef.name,
// status.phase and conditions: a Backup has no status subresource) with
// control characters as "?": none reaches the terminal.
func TestShowSanitisesWhatATenantWrote(t *testing.T) {
	g := NewWithT(t)
	b := readyBackup("tenant-a", "b1", "etcd"+escapes, time.Hour)
	b.Status.Phase = backupsv1alpha1.BackupPhase("Ready" + escapes)
	b.Status.Conditions = []metav1.Condition{
		{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionStatus("False" + escapes), Reason: "Failed" + escapes, Message: "m" + escapes},
		{Type: backupsv1alpha1.BackupConditionContentDrop, Status: metav1.ConditionStatus("True" + escapes), Reason: "Dropped" + escapes},
	}
	e, out, _ := fakeEnv(b)
	err := e.run("show", "b1", "-n", "tenant-a")
	g.Expect(errors.Is(err, silentFailure)).To(BeTrue(), "%v", err)
	g.Expect(out.String()).To(ContainSubstring("of application etcd?[2J?]0;owned?"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x07"))
}

// The report of a dry run names the Backup its tenant wrote in
// spec.backupRef.name (Cozystack's CRD does not check it): sanitised too.
func TestRehearsalResultSanitisesWhatATenantWrote(t *testing.T) {
	g := NewWithT(t)
	e, out, _ := fakeEnv()
	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "r"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "monday" + escapes}},
		Status:     backupsv1alpha1.RestoreJobStatus{Phase: backupsv1alpha1.RestoreJobPhaseSucceeded, Message: "rehearsed" + escapes},
	}
	withRehearsal(g, job, &driverv1alpha1.RehearsalReport{RevisionAfter: 420, KeysAfter: 95,
		Resources: []driverv1alpha1.CountChange{{Name: "pods" + escapes, Before: 3, After: 10}}})
	g.Expect(e.rehearsalResult(job)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("of Backup monday?[2J?]0;owned? succeeded"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x07"))
}

// list and status print tables of what tenants wrote (an application's
// name, a Backup's phase): every cell is sanitised.
func TestTablesSanitiseWhatATenantWrote(t *testing.T) {
	g := NewWithT(t)
	b := readyBackup("tenant-a", "b1", "etcd"+escapes, time.Hour)
	b.Status.Phase = backupsv1alpha1.BackupPhase("Ready" + escapes)
	e, out, _ := fakeEnv(b)
	g.Expect(e.run("list", "-n", "tenant-a", "--terminal", "no")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("etcd?[2J?]0;owned?"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x07"))
	out.Reset()
	_ = e.run("status", "-n", "tenant-a", "-o", "wide", "--terminal", "no")
	g.Expect(out.String()).To(ContainSubstring("etcd?[2J?]0;owned?"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x07"))
}
