package claim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// HolderGone reports whether the RestoreJob holding a claim is gone: it
// does not exist (deleted, or its namespace is), a namesake with another
// UID replaced it, or it finished and let go of its finalizer (it releases
// the claim before that, so a claim outliving it was abandoned). A claim
// that names no RestoreJob is gone too. It is the one test of a stale claim,
// used by restores (to break it), BackupJobs (not to wait for it) and the
// Sweeper (to remove it).
func HolderGone(ctx context.Context, r client.Reader, h *Holder) (bool, error) {
	if h == nil {
		return false, nil
	}
	if h.Namespace == "" || h.Name == "" || h.UID == "" {
		return true, nil
	}
	rj := &backupsv1alpha1.RestoreJob{}
	err := r.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: h.Name}, rj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read RestoreJob %s/%s holding a restore claim: %w", h.Namespace, h.Name, err)
	}
	if rj.UID != h.UID {
		return true, nil
	}
	return rj.Status.Phase.IsTerminal() && !controllerutil.ContainsFinalizer(rj, backupsv1alpha1.RestoreFinalizer), nil
}
