package plankeeper

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
)

// PruneReason says which retention rule selected a Backup.
type PruneReason string

// Retention rules.
const (
	PruneKeepLast PruneReason = "KeepLast"
	PruneMaxAge   PruneReason = "MaxAge"
)

// Prune is a Backup retention selected for deletion.
type Prune struct {
	Backup *backupsv1alpha1.Backup
	Reason PruneReason
}

// BackupsToPrune applies retention to a plan's Backups at now. It never
// selects the newest Ready Backup, the newest inspected one (while a
// newer one's inspection runs, it is the one a content drop would hold), a
// Backup named in inUse (a RestoreJob reads it), one held for a content
// drop (the last good Backup before one: a person releases it by removing
// the annotation), one still Pending (its data may not be complete), or
// one already being deleted. keepLast counts every kept Backup, newest
// first by spec.takenAt; maxAge selects Backups taken longer ago than it.
func BackupsToPrune(backups []backupsv1alpha1.Backup, ret planpolicy.Retention, inUse map[string]bool, now time.Time) []Prune {
	if !ret.Prunes() {
		return nil
	}
	live := make([]*backupsv1alpha1.Backup, 0, len(backups))
	for i := range backups {
		if backups[i].DeletionTimestamp == nil {
			live = append(live, &backups[i])
		}
	}
	SortNewestFirst(live)

	newestReady, newestInspected := "", ""
	for _, b := range live {
		if newestReady == "" && b.Status.Phase == backupsv1alpha1.BackupPhaseReady {
			newestReady = b.Name
		}
		if newestInspected == "" && meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected) {
			newestInspected = b.Name
		}
	}

	var out []Prune
	for i, b := range live {
		if b.Name == newestReady || b.Name == newestInspected || inUse[b.Name] || b.Status.Phase == backupsv1alpha1.BackupPhasePending || b.Status.Phase == "" {
			continue
		}
		if _, held := b.Annotations[driverv1alpha1.ContentDropHoldAnnotation]; held {
			continue
		}
		switch {
		case ret.KeepLast > 0 && i >= int(ret.KeepLast):
			out = append(out, Prune{Backup: b, Reason: PruneKeepLast})
		case ret.MaxAge > 0 && now.Sub(b.Spec.TakenAt.Time) > ret.MaxAge:
			out = append(out, Prune{Backup: b, Reason: PruneMaxAge})
		}
	}
	return out
}

// SortNewestFirst orders Backups newest first (goodbackup.Newer: by
// spec.takenAt, then by name, so the order is stable).
func SortNewestFirst(bs []*backupsv1alpha1.Backup) {
	sort.SliceStable(bs, func(i, j int) bool { return goodbackup.Newer(bs[i], bs[j]) })
}

// NewestReady returns the name of the newest Ready Backup, or "".
func NewestReady(backups []backupsv1alpha1.Backup) string {
	live := make([]*backupsv1alpha1.Backup, 0, len(backups))
	for i := range backups {
		if backups[i].DeletionTimestamp == nil && backups[i].Status.Phase == backupsv1alpha1.BackupPhaseReady {
			live = append(live, &backups[i])
		}
	}
	if len(live) == 0 {
		return ""
	}
	SortNewestFirst(live)
	return live[0].Name
}

// reasonBackupPruned is the reason of the Event on a Backup retention deleted.
const reasonBackupPruned = "BackupPruned"

// applyRetention deletes the Plan's Backups that its retention selects. The
// deletion itself (snapshot and, by policy, the stored object) is the
// Backup finalizer's work.
func (r *Reconciler) applyRetention(ctx context.Context, w *work, obs *observed, now time.Time) error {
	plan, ret := w.plan, w.policy.Retention
	prunes := BackupsToPrune(obs.backups, ret, obs.inUse, now)
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
	for _, p := range BackupsToPrune(obs.backups, ret, inUse, now) {
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
