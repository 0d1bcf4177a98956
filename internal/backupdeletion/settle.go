package backupdeletion

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// chainSettle is how long after a chained Backup's deletion began its
// cleanup waits before it lists the chain a last time and deletes the
// snapshot. A capture that followed this Backup is rolled onto another
// base or stopped as soon as the Backup is being deleted (the capture
// controller), and on SIGTERM it uploads what it holds, killed at the
// latest 30 s later (the Pod's grace period): what it wrote meanwhile is
// under the chain's prefix by then. A timer on a deadline, not a poll.
const chainSettle = time.Minute

// settling is returned while the chain's last listing waits for
// chainSettle; the Reconcile asks to be called again after it.
type settling struct{ after time.Duration }

func (s *settling) Error() string {
	return fmt.Sprintf("the chain's last listing waits %s for a capture's last upload", s.after)
}

// settleLeft is how long b's cleanup still waits for chainSettle, or 0:
// only while a capture may write, that is while any capture record
// (CaptureProgress, read live: the capture controller may be off here) is
// in b's namespace; without capture, a Backup whose manifest is signed
// has no chain being written, and its deletion does not wait.
func (r *Reconciler) settleLeft(ctx context.Context, b *backupsv1alpha1.Backup) (time.Duration, error) {
	if b.DeletionTimestamp == nil {
		return 0, nil
	}
	left := max(b.DeletionTimestamp.Add(chainSettle).Sub(r.now()), 0)
	if left == 0 {
		return 0, nil
	}
	var records driverv1alpha1.CaptureProgressList
	if err := r.APIReader.List(ctx, &records, client.InNamespace(b.Namespace), client.Limit(1)); err != nil {
		return 0, fmt.Errorf("list CaptureProgresses in %s: %w", b.Namespace, err)
	}
	if len(records.Items) == 0 {
		return 0, nil
	}
	return left, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}
