package plan

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// observed is what one reconcile of a Plan knows about its BackupJobs.
type observed struct {
	// ownJobs are the BackupJobs this Plan created (controller reference).
	ownJobs []backupsv1alpha1.BackupJob
	// appJobsRunning is true when any BackupJob for the Plan's application
	// (the Plan's or another) has not finished.
	appJobsRunning bool
}

func (r *Reconciler) observe(ctx context.Context, plan *backupsv1alpha1.Plan) (*observed, error) {
	obs := &observed{}
	var jobs backupsv1alpha1.BackupJobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(plan.Namespace)); err != nil {
		return nil, fmt.Errorf("list BackupJobs in %s: %w", plan.Namespace, err)
	}
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	for _, j := range jobs.Items {
		if ownedBy(&j, plan) {
			obs.ownJobs = append(obs.ownJobs, j)
		}
		if !j.Status.Phase.IsTerminal() && j.DeletionTimestamp == nil && sameApp(app, j.Spec.ApplicationRef) {
			obs.appJobsRunning = true
		}
	}
	return obs, nil
}

func ownedBy(j *backupsv1alpha1.BackupJob, plan *backupsv1alpha1.Plan) bool {
	ref := metav1.GetControllerOf(j)
	return ref != nil && ref.UID == plan.UID
}

func sameApp(a, b backupsv1alpha1.TypedLocalObjectReference) bool {
	b = backupsv1alpha1.NormalizeApplicationRef(b)
	return a.APIGroupOrEmpty() == b.APIGroupOrEmpty() && a.Kind == b.Kind && a.Name == b.Name
}

// lastConsidered is the newest run time the Plan has already started or
// skipped: runs at or before it are never looked at again. It starts at the
// Plan's creation, and also counts the run times recorded on its own jobs,
// so a lost (or tampered) record cannot make a run happen twice.
func lastConsidered(plan *backupsv1alpha1.Plan, rec *planrecord.Record, obs *observed) time.Time {
	t := plan.CreationTimestamp.Time
	for _, mt := range []*metav1.Time{rec.LastScheduleTime, rec.LastSkippedTime} {
		if mt != nil && mt.After(t) {
			t = mt.Time
		}
	}
	for i := range obs.ownJobs {
		if _, ok := obs.ownJobs[i].Annotations[ScheduledAtAnnotation]; !ok {
			continue
		}
		if at := JobScheduledAt(&obs.ownJobs[i]); at.After(t) {
			t = at
		}
	}
	return t
}
