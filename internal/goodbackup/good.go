// Package goodbackup is the one definition of a good Backup: Ready, not
// being deleted, its provenance verified, its inspection not failed, and
// not marked ContentDrop. Drills rehearse the newest good Backup of their
// Plan, `restore --latest` restores the newest good Backup of its
// application, and the inspection compares a new manifest with the newest
// sound one before it.
//
// How a Backup is known to be verified is the caller's: the driver checks
// the signature with its key (provenance.Verify, VerifyManifest) and the
// drill also waits for the Verified condition the driver shows; the CLI,
// which holds no key, reads that condition.
package goodbackup

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Sound reports whether b's bytes can be relied on: Ready, not being
// deleted, verified (the caller's check), and its inspection not failed.
// A Backup marked ContentDrop is still sound, it holds what was there:
// the inspection compares the next Backup with it (a drop is reported
// once; the Backup before it is held from retention), and ebdctl status
// counts it.
func Sound(b *backupsv1alpha1.Backup, verified bool) bool {
	return b.Status.Phase == backupsv1alpha1.BackupPhaseReady && b.DeletionTimestamp == nil && verified && !InspectionFailed(b)
}

// Good reports whether b is a good Backup to restore or rehearse: Sound,
// and not marked ContentDrop (restoring it restores the loss).
func Good(b *backupsv1alpha1.Backup, verified bool) bool {
	return Sound(b, verified) && !ContentDropped(b)
}

// InspectionFailed reports whether b's inspection ended without a manifest
// (InspectionFailed or InspectionRefused): such a Backup is never sound. A
// Backup still being inspected, never inspected, or whose strategy
// disables inspection has not failed it.
func InspectionFailed(b *backupsv1alpha1.Backup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == backupsv1alpha1.BackupReasonInspectionFailed || c.Reason == backupsv1alpha1.BackupReasonInspectionRefused)
}

// ContentDropped reports whether the driver marked b as holding markedly
// less than the Backup before it (ContentDrop True).
func ContentDropped(b *backupsv1alpha1.Backup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionContentDrop)
}

// ShownVerified reports whether the driver has not marked b unverified
// (its Verified condition is not False): the CLI's reading, which cannot
// check the signature itself. A Backup the driver has not judged yet
// counts.
func ShownVerified(b *backupsv1alpha1.Backup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
	return c == nil || c.Status != metav1.ConditionFalse
}

// Newer reports whether a was taken after b: by spec.takenAt, then by
// name, so the order is total.
func Newer(a, b *backupsv1alpha1.Backup) bool {
	if !a.Spec.TakenAt.Equal(&b.Spec.TakenAt) {
		return b.Spec.TakenAt.Before(&a.Spec.TakenAt)
	}
	return a.Name > b.Name
}

// Newest is the newest (Newer) of backups that pick accepts, or nil.
func Newest(backups []backupsv1alpha1.Backup, pick func(*backupsv1alpha1.Backup) bool) *backupsv1alpha1.Backup {
	var best *backupsv1alpha1.Backup
	for i := range backups {
		b := &backups[i]
		if pick(b) && (best == nil || Newer(b, best)) {
			best = b
		}
	}
	return best
}
