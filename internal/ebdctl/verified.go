package ebdctl

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// verifiedOf returns the Verified condition the driver maintains on a
// Backup for display (True: it carries the driver's valid provenance;
// False: it does not, the message says why), or nil. The CLI cannot check
// provenance itself (the key is the driver's); it shows what the driver
// concluded.
func verifiedOf(b *backupsv1alpha1.Backup) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
}

// goodBackup reports whether b counts as a backup to rely on: Ready, not
// being deleted, not marked unverified by the driver and not failed
// inspection. A Backup the driver has not judged yet (no condition)
// counts.
func goodBackup(b *backupsv1alpha1.Backup) bool {
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady || b.DeletionTimestamp != nil {
		return false
	}
	if b.InspectionFailed() {
		return false
	}
	c := verifiedOf(b)
	return c == nil || c.Status != metav1.ConditionFalse
}

// droppedContent reports whether the driver marked b as holding markedly
// less than the Backup before it (ContentDrop True).
func droppedContent(b *backupsv1alpha1.Backup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionContentDrop)
}

// getBackup reads Backup ns/name; the error names it.
func getBackup(ctx context.Context, c client.Reader, ns, name string) (*backupsv1alpha1.Backup, error) {
	var b backupsv1alpha1.Backup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err != nil {
		return nil, fmt.Errorf("Backup %s/%s: %w", ns, name, err)
	}
	return &b, nil
}
