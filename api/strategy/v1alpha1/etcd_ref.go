package v1alpha1

import backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"

// IsEtcd reports whether ref (a BackupClass entry's or a Backup's
// strategyRef) names an Etcd strategy: this group and kind.
func IsEtcd(ref backupsv1alpha1.TypedLocalObjectReference) bool {
	return ref.APIGroupOrEmpty() == GroupVersion.Group && ref.Kind == EtcdStrategyKind
}
