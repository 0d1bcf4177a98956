package backupdeletion

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// waitForRestores holds back the deletion of a Backup whose object would be
// deleted while an unfinished RestoreJob reads it (pointintime.Reads: its
// backupRef, or the base a restore to a point pinned): deleting the data under
// a running restore could leave the application with no etcd at all. It
// reports true while waiting; the RestoreJob watch brings the Backup back
// when the restore ends.
func (r *Reconciler) waitForRestores(ctx context.Context, b *backupsv1alpha1.Backup, v provenance.Verdict) (bool, error) {
	if !v.Verified || artifact.RecordedOf(b).DeletionPolicy != driverv1alpha1.DeletionPolicyDelete ||
		b.Annotations[SkipObjectDeletionAnnotation] == "true" {
		return false, nil
	}
	// Live, not cached: a RestoreJob created a moment ago counts.
	var restores backupsv1alpha1.RestoreJobList
	if err := r.APIReader.List(ctx, &restores, client.InNamespace(b.Namespace)); err != nil {
		return false, fmt.Errorf("list RestoreJobs in %s: %w", b.Namespace, err)
	}
	var users []string
	for _, rj := range restores.Items {
		if slices.Contains(pointintime.Reads(&rj), b.Name) && !rj.Status.Phase.IsTerminal() {
			users = append(users, rj.Name)
		}
	}
	if len(users) == 0 {
		return false, nil
	}
	msg := fmt.Sprintf("waiting for RestoreJob %s to finish before deleting the stored snapshot", strings.Join(users, ", "))
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, backupsv1alpha1.BackupReasonInUseByRestore, "Cleanup", "%s", msg)
	return true, r.setCondition(ctx, b, backupsv1alpha1.BackupConditionCleanup, false, backupsv1alpha1.BackupReasonInUseByRestore, msg)
}

// backupOfRestore maps a RestoreJob to the Backups it reads.
func backupOfRestore(_ context.Context, obj client.Object) []reconcile.Request {
	rj, ok := obj.(*backupsv1alpha1.RestoreJob)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, name := range pointintime.Reads(rj) {
		if name != "" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rj.Namespace, Name: name}})
		}
	}
	return out
}
