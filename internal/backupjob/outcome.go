package backupjob

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// outcome is what one reconcile decided about a job: either the status it
// should now have, or a transient error to retry with backoff.
type outcome struct {
	phase   backupsv1alpha1.BackupJobPhase
	reason  string
	message string
	// backupRef is set on success.
	backupRef string
	// snapshotSize is reported in metrics on success.
	snapshotSize int64
	// following: the job's snapshot has started, so the job waits for it
	// to end whatever the deadline (a snapshot abandoned mid-way would
	// still land in S3, with no Backup to account for it).
	following bool
	// started is when the job's snapshot was created: the job's start
	// when it wrote no status before it (it went straight to its
	// snapshot).
	started *metav1.Time
	// recheck, when set, is how soon a waiting job is looked at again:
	// it waits on something no watch reports (a snapshot the driver
	// started that the cache does not show).
	recheck time.Duration
	// err is a transient failure: nothing is written and the reconcile is
	// retried with backoff.
	err error
}

// waiting: the job cannot proceed until something else changes; it fails
// at the deadline.
func waiting(phase backupsv1alpha1.BackupJobPhase, reason, format string, args ...any) outcome {
	return outcome{phase: phase, reason: reason, message: fmt.Sprintf(format, args...)}
}

// failed: the job ends Failed; nothing a retry does would change that.
func failed(reason, format string, args ...any) outcome {
	return outcome{phase: backupsv1alpha1.BackupJobPhaseFailed, reason: reason, message: fmt.Sprintf(format, args...)}
}

// retry: a transient error (API server unavailable, conflict).
func retry(err error) outcome {
	return outcome{err: err}
}

func (o outcome) terminal() bool { return o.phase.IsTerminal() }
