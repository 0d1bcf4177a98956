package backupdeletion

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// deleteSnapshot removes the EtcdSnapshot the Backup records, whatever the
// deletion policy: the snapshot object is bookkeeping, the S3 object is the
// data. It leaves alone a snapshot that is provably another one: a
// different UID than recorded, or owned by a different Backup.
func (r *Reconciler) deleteSnapshot(ctx context.Context, b *backupsv1alpha1.Backup) error {
	rec := artifact.RecordedOf(b)
	if rec.SnapshotName == "" {
		return nil
	}
	var snap etcdv1alpha2.EtcdSnapshot
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: rec.SnapshotName}, &snap)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read EtcdSnapshot %s/%s: %w", b.Namespace, rec.SnapshotName, err)
	}
	if why := foreign(&snap, b, rec); why != "" {
		log.FromContext(ctx).Info("not deleting an EtcdSnapshot that is not this Backup's", "etcdSnapshot", snap.Name, "why", why)
		return nil
	}
	err = r.Client.Delete(ctx, &snap, client.Preconditions{UID: &snap.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		msg := fmt.Sprintf("cannot delete EtcdSnapshot %s: %v; retrying", snap.Name, err)
		return r.blocked(ctx, b, backupsv1alpha1.BackupReasonSnapshotDeleteFailed, msg, err)
	}
	r.Recorder.Eventf(b, &snap, corev1.EventTypeNormal, "SnapshotDeleted", "Cleanup", "deleted EtcdSnapshot %s", snap.Name)
	return nil
}

// foreign says why snap is not b's snapshot, or "" when it is: b is among
// its Backup owners (the backup path hands each snapshot to its Backup) and
// b recorded its UID, if it recorded one. A Backup is tenant-writable and
// may name any EtcdSnapshot of its namespace — a BackupJob's running one, a
// RestoreJob's safety snapshot — so naming is never enough; snapshots of the
// Cozystack driver carry no owner and are kept, as that driver keeps them.
func foreign(snap *etcdv1alpha2.EtcdSnapshot, b *backupsv1alpha1.Backup, rec artifact.Recorded) string {
	if rec.SnapshotUID != "" && types.UID(rec.SnapshotUID) != snap.UID {
		return "its UID differs from the one the Backup recorded"
	}
	for _, ref := range snap.OwnerReferences {
		if ref.Kind == "Backup" && ref.APIVersion == backupsv1alpha1.GroupVersion.String() && ref.UID == b.UID {
			return ""
		}
	}
	return "this Backup does not own it"
}
