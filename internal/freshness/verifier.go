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
// A Verifier must be a pure function of the object it is given and of the
// keys (Options.Epoch): the Collector remembers each verdict per Backup UID,
// resourceVersion and epoch, and asks again only when one changes. An error
// means it could not decide now (the keys could not be read): that Backup
// is counted nowhere in this scrape and nothing is remembered about it, so
// a transient failure never turns into a lasting "unverified".
type Verifier func(*backupsv1alpha1.Backup) (takenAt time.Time, ok bool, err error)

// TrustReadyPhase is a PLACEHOLDER Verifier for tests and for drivers built
// without Backup provenance: it accepts every Backup whose status.phase is
// Ready and trusts spec.takenAt as written. Anyone allowed to create a
// Backup can therefore make an application look freshly backed up. The
// manager uses the provenance check unless a test sets
// manager.Options.BackupVerifier.
func TrustReadyPhase(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady || b.Spec.TakenAt.IsZero() {
		return time.Time{}, false, nil
	}
	return b.Spec.TakenAt.Time, true, nil
}

// HoldChecker reports whether a Backup carries a content-drop hold the
// driver placed (contentdrop.HeldByDriver): the held-for-content-drop
// gauge behind a platform alert counts only those, since a tenant can set
// the annotation on its own Backup. Like a Verifier it must be a pure
// function of the object and of the keys (Options.Epoch); an error means
// it could not decide now.
type HoldChecker func(*backupsv1alpha1.Backup) (bool, error)
