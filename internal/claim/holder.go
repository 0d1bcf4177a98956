package claim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

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

// ReleaseIfGone releases the claim h holds on t when its holder is gone
// (HolderGone, read through r) and reports whether it was. Whoever sees a
// holder gone releases its claim then: a BackupJob about to go ahead
// despite it, the restore controller when a RestoreJob's deletion reaches
// it. Left alone, it held nothing but cost every BackupJob of the cluster
// a read until the Sweeper came by. r must read live (a cache that has
// not seen a new holder yet would call it gone); the delete is
// conditioned on the Lease's UID, so a claim taken since is kept.
func (s Store) ReleaseIfGone(ctx context.Context, r client.Reader, t Target, h *Holder) (bool, error) {
	gone, err := HolderGone(ctx, r, h)
	if err != nil || !gone {
		return gone, err
	}
	if err := s.Release(ctx, t, h); err != nil {
		return true, err
	}
	sweptTotal.Inc()
	log.FromContext(ctx).Info("released a restore claim whose holder is gone", "target", t.String(),
		"namespace", h.Namespace, "restoreJob", h.Name)
	return true, nil
}

// ReleaseGone releases the claim on t when there is one and its holder is
// gone (ReleaseIfGone); the claim is read through the Store's Reader.
func (s Store) ReleaseGone(ctx context.Context, r client.Reader, t Target) error {
	h, err := s.Get(ctx, t)
	if err != nil || h == nil {
		return err
	}
	_, err = s.ReleaseIfGone(ctx, r, t, h)
	return err
}
