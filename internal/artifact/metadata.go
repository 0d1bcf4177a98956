package artifact

// driverMetadata keys. The etcd.aenix.io/ prefix is the one the Cozystack
// driver writes and reads; keeping it lets Backups move between drivers.
const (
	MetaSnapshotName    = "etcd.aenix.io/backup-name"
	MetaBucket          = "etcd.aenix.io/bucket"
	MetaEndpoint        = "etcd.aenix.io/endpoint"
	MetaKey             = "etcd.aenix.io/key"
	MetaRegion          = "etcd.aenix.io/region"
	MetaForcePathStyle  = "etcd.aenix.io/force-path-style"
	MetaCredentialsName = "etcd.aenix.io/credentials-secret-name"

	// MetaDeletionPolicy records the strategy's deletionPolicy at the time
	// the Backup was taken, so a later strategy edit cannot change what
	// deleting this Backup does.
	MetaDeletionPolicy = "etcd-backup-driver.cozystack.io/deletion-policy"
	// MetaSnapshotUID records the EtcdSnapshot's UID.
	MetaSnapshotUID = "etcd-backup-driver.cozystack.io/snapshot-uid"
	// MetaEtcdVersion records the etcd version (spec.version of the
	// EtcdCluster) the snapshot was taken from: a restore refuses a target
	// older than it.
	MetaEtcdVersion = "etcd-backup-driver.cozystack.io/etcd-version"
	// MetaProvenance is the driver's signature over what the Backup
	// records (see internal/provenance).
	MetaProvenance = "etcd-backup-driver.cozystack.io/provenance"
)

// Underlying-resources payload identity.
const (
	UnderlyingKind       = "EtcdBackupSnapshot"
	UnderlyingAPIVersion = "backups.cozystack.io/v1alpha1"
)
