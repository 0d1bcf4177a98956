package keeper

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
)

// keepStart moves the window's start off a base Backup that is no longer
// one (deleted, being deleted by retention or by hand, no longer good):
// its chain goes with it (internal/backupdeletion), so no restore can
// start there. The window then starts at the oldest base Backup still
// kept that was taken at or after the old start: the window ran without a
// gap from there, so it runs from any later base. With none (the current
// base is going too), the window is left as it is; the next base moves it.
func (r *Reconciler) keepStart(ctx context.Context, plan *backupsv1alpha1.Plan, w *driverv1alpha1.CaptureWindow) error {
	var from backupsv1alpha1.Backup
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: w.FromBackup}, &from)
	if err == nil {
		base, err := r.baseOf(ctx, plan, &from)
		if err != nil || base != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("read Backup %s/%s, the window's start: %w", plan.Namespace, w.FromBackup, err)
	}
	bases, err := r.bases(ctx, plan)
	if err != nil {
		return err
	}
	var oldest *backupsv1alpha1.Backup
	for i := range bases {
		b := bases[i].Backup
		if !b.Spec.TakenAt.Before(&w.From) && (oldest == nil || goodbackup.Newer(oldest, b)) {
			oldest = b
		}
	}
	if oldest == nil {
		return nil
	}
	log.FromContext(ctx).Info("the window's first base Backup is gone; the window starts at the oldest one kept", "gone", w.FromBackup, "from", oldest.Name)
	w.From, w.FromBackup = oldest.Spec.TakenAt, oldest.Name
	return nil
}
