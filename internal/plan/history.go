package plan

import (
	"sort"
	"time"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// ScheduledAtAnnotation on a BackupJob records the run time (RFC 3339) the
// Plan created it for. It lets the Plan recover its last run from its jobs
// if a write of its record was lost.
const ScheduledAtAnnotation = backupsv1alpha1.ScheduledAtAnnotation

// JobsToPrune returns the finished BackupJobs beyond the history limits:
// the oldest Succeeded ones beyond succeeded and the oldest Failed ones
// beyond failed (a negative limit keeps them all). Running jobs and jobs
// already being deleted are never selected.
func JobsToPrune(jobs []backupsv1alpha1.BackupJob, succeeded, failed int) []*backupsv1alpha1.BackupJob {
	var ok, bad []*backupsv1alpha1.BackupJob
	for i := range jobs {
		j := &jobs[i]
		if j.DeletionTimestamp != nil {
			continue
		}
		switch j.Status.Phase {
		case backupsv1alpha1.BackupJobPhaseSucceeded:
			ok = append(ok, j)
		case backupsv1alpha1.BackupJobPhaseFailed:
			bad = append(bad, j)
		}
	}
	return append(oldestBeyond(ok, succeeded), oldestBeyond(bad, failed)...)
}

func oldestBeyond(jobs []*backupsv1alpha1.BackupJob, keep int) []*backupsv1alpha1.BackupJob {
	if keep < 0 || len(jobs) <= keep {
		return nil
	}
	sort.SliceStable(jobs, func(i, j int) bool {
		ti, tj := JobScheduledAt(jobs[i]), JobScheduledAt(jobs[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return jobs[i].Name > jobs[j].Name
	})
	return jobs[keep:]
}

// JobScheduledAt is the run time a BackupJob was created for: its
// ScheduledAtAnnotation, or its creation time when that is missing or bad.
func JobScheduledAt(j *backupsv1alpha1.BackupJob) time.Time {
	if v, ok := j.Annotations[ScheduledAtAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	return j.CreationTimestamp.Time
}
