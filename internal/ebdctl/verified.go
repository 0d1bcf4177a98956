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

// getBackup reads Backup ns/name; the error names it.
func getBackup(ctx context.Context, c client.Reader, ns, name string) (*backupsv1alpha1.Backup, error) {
	var b backupsv1alpha1.Backup
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err != nil {
		return nil, fmt.Errorf("Backup %s/%s: %w", ns, name, err)
	}
	return &b, nil
}
