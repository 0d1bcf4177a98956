package freshness

import (
	"time"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Verifier decides whether a Backup counts as a real backup of its
// application, and when its data was captured. A tenant can write any
// Backup it likes into its namespace (the kind has no status subresource),
// so only the driver, holding a key tenants cannot read, can tell its own
// Backups from forged ones; the metrics count only what the Verifier
// accepts.
//
// A Verifier must be a pure function of the object it is given: the
// Collector remembers each verdict per Backup UID and resourceVersion and
// asks again only when the object changes.
type Verifier func(*backupsv1alpha1.Backup) (takenAt time.Time, ok bool)

// TrustReadyPhase is a PLACEHOLDER Verifier for tests and for drivers built
// without Backup provenance: it accepts every Backup whose status.phase is
// Ready and trusts spec.takenAt as written. Anyone allowed to create a
// Backup can therefore make an application look freshly backed up. The
// manager uses the provenance check unless a test sets
// manager.Options.BackupVerifier.
func TrustReadyPhase(b *backupsv1alpha1.Backup) (time.Time, bool) {
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady || b.Spec.TakenAt.IsZero() {
		return time.Time{}, false
	}
	return b.Spec.TakenAt.Time, true
}
