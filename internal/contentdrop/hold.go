package contentdrop

import (
	"context"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// A hold keeps the last good Backup before a drop from retention: its
// annotation (driverv1alpha1.ContentDropHoldAnnotation) names the Backup
// that dropped. Retention honours any hold, whoever set it (a tenant that
// holds its own Backup keeps what it may keep anyway). What the platform
// counts, the held-for-content-drop gauge behind an alert, is only a hold
// the driver placed: its mark (driverv1alpha1.ContentDropHoldMarkAnnotation)
// signs the annotation's value for this Backup (namespace, name, UID), so
// a tenant can neither forge one nor copy one from another Backup.

// Hold sets b's hold for the drop in Backup dropped, signed. It changes b
// only; the caller writes it. A hold the driver already placed is kept as
// it is (the first drop it was placed for).
func Hold(ctx context.Context, keys provenance.Keys, b *backupsv1alpha1.Backup, dropped string) error {
	if held, err := HeldByDriver(ctx, keys, b); err != nil || held {
		return err
	}
	mark, err := provenance.Mark(ctx, keys, holdDomain(b), []byte(dropped))
	if err != nil {
		return err
	}
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[driverv1alpha1.ContentDropHoldAnnotation] = dropped
	b.Annotations[driverv1alpha1.ContentDropHoldMarkAnnotation] = mark
	return nil
}

// HeldByDriver reports whether b carries a hold the driver placed. The
// error is only for keys that cannot be read now.
func HeldByDriver(ctx context.Context, keys provenance.Keys, b *backupsv1alpha1.Backup) (bool, error) {
	dropped, held := b.Annotations[driverv1alpha1.ContentDropHoldAnnotation]
	mark := b.Annotations[driverv1alpha1.ContentDropHoldMarkAnnotation]
	if !held || mark == "" {
		return false, nil
	}
	return provenance.CheckMark(ctx, keys, holdDomain(b), []byte(dropped), mark)
}

func holdDomain(b *backupsv1alpha1.Backup) string {
	return "etcd-backup-driver content-drop hold\n" + b.Namespace + "\n" + b.Name + "\n" + string(b.UID)
}
