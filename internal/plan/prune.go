package plan

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// reasonJobPruned is the reason of the Event on a pruned BackupJob.
const reasonJobPruned = "BackupJobPruned"

// pruneJobs deletes the Plan's finished BackupJobs beyond its history
// limits. Backups are not owned by their jobs, so this never loses data.
func (r *Reconciler) pruneJobs(ctx context.Context, w *work, obs *observed) error {
	plan := w.plan
	var errs []error
	for _, j := range JobsToPrune(obs.ownJobs, w.policy.KeepSucceeded, w.policy.KeepFailed) {
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
