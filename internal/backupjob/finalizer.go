package backupjob

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// releaseJob removes BackupJobSnapshotFinalizer, which earlier releases
// put on a job while its snapshot ran: the job ended, was deleted before
// its snapshot started, or waited out its deadline. Jobs this release
// starts never carry it (their snapshot carries SnapshotRecordFinalizer),
// so this is no request for them.
func (r *Reconciler) releaseJob(ctx context.Context, job *backupsv1alpha1.BackupJob) error {
	if !controllerutil.ContainsFinalizer(job, backupsv1alpha1.BackupJobSnapshotFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(job, backupsv1alpha1.BackupJobSnapshotFinalizer)
	if err := r.Patch(ctx, job, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from BackupJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// requeueOnConflict: a finalizer patch that met a newer job (the cache is a
// moment behind) is tried again on it, without a reconcile error.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}
