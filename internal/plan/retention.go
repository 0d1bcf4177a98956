package plan

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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
// drop (the last good Backup before
// one: a person releases it by removing the annotation), one still
// Pending (its data may not be complete), or one already being deleted. keepLast counts every kept Backup, newest first by
// spec.takenAt; maxAge selects Backups taken longer ago than it.
func BackupsToPrune(backups []backupsv1alpha1.Backup, ret *backupsv1alpha1.PlanRetention, inUse map[string]bool, now time.Time) []Prune {
	if ret == nil || (ret.KeepLast == nil && ret.MaxAge == nil) {
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
		if _, held := b.Annotations[backupsv1alpha1.ContentDropHoldAnnotation]; held {
			continue
		}
		switch {
		case ret.KeepLast != nil && i >= int(*ret.KeepLast):
			out = append(out, Prune{Backup: b, Reason: PruneKeepLast})
		case ret.MaxAge != nil && now.Sub(b.Spec.TakenAt.Time) > ret.MaxAge.Duration:
			out = append(out, Prune{Backup: b, Reason: PruneMaxAge})
		}
	}
	return out
}

// SortNewestFirst orders Backups by spec.takenAt, newest first, then by
// name so the order is stable.
func SortNewestFirst(bs []*backupsv1alpha1.Backup) {
	sort.SliceStable(bs, func(i, j int) bool {
		ti, tj := bs[i].Spec.TakenAt.Time, bs[j].Spec.TakenAt.Time
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return bs[i].Name > bs[j].Name
	})
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
