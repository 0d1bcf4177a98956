package plan

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Event reasons of pruning.
const (
	reasonJobPruned    = "BackupJobPruned"
	reasonBackupPruned = "BackupPruned"
)

// pruneJobs deletes the Plan's finished BackupJobs beyond its history
// limits. Backups are not owned by their jobs, so this never loses data.
func (r *Reconciler) pruneJobs(ctx context.Context, plan *backupsv1alpha1.Plan, obs *observed) error {
	succeeded, failed := DefaultSuccessfulJobsHistoryLimit, DefaultFailedJobsHistoryLimit
	if l := plan.Spec.SuccessfulJobsHistoryLimit; l != nil {
		succeeded = int(*l)
	}
	if l := plan.Spec.FailedJobsHistoryLimit; l != nil {
		failed = int(*l)
	}
	var errs []error
	for _, j := range JobsToPrune(obs.ownJobs, succeeded, failed) {
		err := r.Client.Delete(ctx, j, client.Preconditions{UID: &j.UID}, client.PropagationPolicy("Background"))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete BackupJob %s/%s beyond the history limit: %w", j.Namespace, j.Name, err))
			continue
		}
		log.FromContext(ctx).Info("pruned BackupJob beyond the history limit", "backupJob", j.Name, "phase", j.Status.Phase)
		r.Recorder.Eventf(plan, j, corev1.EventTypeNormal, reasonJobPruned, "Prune",
			"deleted %s BackupJob %s beyond the history limit", j.Status.Phase, j.Name)
	}
	return errors.Join(errs...)
}

// applyRetention deletes the Plan's Backups that its retention selects. The
// deletion itself (snapshot and, by policy, the stored object) is the
// Backup finalizer's work.
func (r *Reconciler) applyRetention(ctx context.Context, plan *backupsv1alpha1.Plan, obs *observed, now time.Time) error {
	prunes := BackupsToPrune(obs.backups, plan.Spec.Retention, obs.inUse, now)
	if len(prunes) == 0 {
		return nil
	}
	// A RestoreJob created a moment ago may not be in the cache yet; ask
	// the API server before deleting anything a restore might be reading.
	inUse, err := restoresInProgress(ctx, r.APIReader, plan.Namespace)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range BackupsToPrune(obs.backups, plan.Spec.Retention, inUse, now) {
		b := p.Backup
		err := r.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete Backup %s/%s by retention: %w", b.Namespace, b.Name, err))
			continue
		}
		prunedBackupsTotal.WithLabelValues(string(p.Reason)).Inc()
		log.FromContext(ctx).Info("deleted Backup by retention", "backup", b.Name, "rule", p.Reason, "takenAt", b.Spec.TakenAt)
		r.Recorder.Eventf(plan, b, corev1.EventTypeNormal, reasonBackupPruned, "Retain",
			"deleted Backup %s (taken %s) by retention rule %s", b.Name, b.Spec.TakenAt.UTC().Format(time.RFC3339), p.Reason)
	}
	return errors.Join(errs...)
}
