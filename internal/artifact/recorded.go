package artifact

import (
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Recorded is what a Backup says about its snapshot independently of where
// the snapshot is stored, so it is readable even when Resolve fails.
type Recorded struct {
	// SnapshotName is the EtcdSnapshot's name (same namespace), or "".
	SnapshotName string
	// SnapshotUID is the EtcdSnapshot's UID, or "" when not recorded
	// (Backups of the Cozystack driver).
	SnapshotUID string
	// DeletionPolicy recorded when the Backup was taken; Retain if none.
	DeletionPolicy driverv1alpha1.DeletionPolicy
	// EtcdVersion of the source cluster, or "" when not recorded.
	EtcdVersion string
}

// RecordedOf reads the snapshot identity and deletion policy of b.
func RecordedOf(b *backupsv1alpha1.Backup) Recorded {
	meta := b.Spec.DriverMetadata
	r := Recorded{
		SnapshotName:   meta[MetaSnapshotName],
		SnapshotUID:    meta[MetaSnapshotUID],
		DeletionPolicy: driverv1alpha1.DeletionPolicy(meta[MetaDeletionPolicy]),
		EtcdVersion:    meta[MetaEtcdVersion],
	}
	if r.DeletionPolicy == "" {
		r.DeletionPolicy = driverv1alpha1.DeletionPolicyRetain
	}
	return r
}
