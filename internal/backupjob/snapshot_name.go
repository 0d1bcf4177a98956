package backupjob

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// maxSnapshotName keeps the etcd-operator's Job name, <snapshot>-snapshot,
// within the 63 characters a Job name may have (its pods carry it as a label).
const maxSnapshotName = 63 - len("-snapshot")

// SnapshotName is the EtcdSnapshot name for job: a readable prefix of the
// job name plus a hash of the job's UID. It is deterministic, so a retry
// after a crash or with a stale cache finds the same object instead of
// creating a second one, and a re-created job of the same name (new UID)
// gets a new snapshot rather than adopting the old one.
func SnapshotName(job *backupsv1alpha1.BackupJob) string {
	sum := sha256.Sum256([]byte(job.UID))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := strings.ReplaceAll(job.Name, ".", "-")
	if max := maxSnapshotName - len(suffix) - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		return "backup-" + suffix
	}
	return prefix + "-" + suffix
}
