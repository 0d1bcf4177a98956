package plankeeper

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// observed is what one reconcile of a Plan knows about its Backups and
// the RestoreJobs of its namespace.
type observed struct {
	// backups are the Plan's Backups: those the driver verifiably
	// recorded for this Plan and application (whoever created the
	// BackupJob that took them), each with spec.takenAt set to the signed
	// time. Hand-written or edited Backups are not here, so retention
	// never counts, orders by, or deletes them.
	backups []backupsv1alpha1.Backup
	// restores are all RestoreJobs in the Plan's namespace; drills are
	// picked from them.
	restores []backupsv1alpha1.RestoreJob
	// inUse names Backups a RestoreJob pins (RestoreJob.PinsBackups).
	inUse map[string]bool
}

func (r *Reconciler) observe(ctx context.Context, plan *backupsv1alpha1.Plan) (*observed, error) {
	obs := &observed{}
	ns := client.InNamespace(plan.Namespace)
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)

	var backups backupsv1alpha1.BackupList
	if err := r.Client.List(ctx, &backups, ns, client.MatchingLabels{backupsv1alpha1.PlanNameLabel: names.LabelValue(plan.Name)}); err != nil {
		return nil, fmt.Errorf("list Backups of Plan %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	for _, b := range backups.Items {
		v, err := provenance.Verify(ctx, r.Keys, &b)
		if err != nil {
			return nil, err
		}
		// Labels are only a hint; the signature says whose Backup it is.
		if !v.Verified || v.Facts.Plan != plan.Name || v.Facts.Application != app.Name {
			continue
		}
		b.Spec.TakenAt = metav1.NewTime(v.TakenAt())
		obs.backups = append(obs.backups, b)
	}

	var restores backupsv1alpha1.RestoreJobList
	if err := r.Client.List(ctx, &restores, ns); err != nil {
		return nil, fmt.Errorf("list RestoreJobs in %s: %w", plan.Namespace, err)
	}
	obs.restores = restores.Items
	obs.inUse = pinnedBackups(restores.Items)
	return obs, nil
}

// restoresInProgress names the Backups that RestoreJobs in namespace still
// pin: unfinished ones, and failed ones that left the cluster deleted
// until a person deletes them (RestoreJob.PinsBackups).
func restoresInProgress(ctx context.Context, c client.Reader, namespace string) (map[string]bool, error) {
	var restores backupsv1alpha1.RestoreJobList
	if err := c.List(ctx, &restores, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list RestoreJobs in %s: %w", namespace, err)
	}
	return pinnedBackups(restores.Items), nil
}

// pinnedBackups names the Backups that restores pin (pointintime.Reads:
// their backupRef's, and the base a restore to a point pinned).
func pinnedBackups(restores []backupsv1alpha1.RestoreJob) map[string]bool {
	inUse := map[string]bool{}
	for _, rj := range restores {
		if rj.PinsBackups() {
			for _, name := range pointintime.Reads(&rj) {
				inUse[name] = true
			}
		}
	}
	return inUse
}
