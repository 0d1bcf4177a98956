package plan

import (
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

var epoch = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func job(name string, hour int, phase backupsv1alpha1.BackupJobPhase) backupsv1alpha1.BackupJob {
	return backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			ScheduledAtAnnotation: epoch.Add(time.Duration(hour) * time.Hour).Format(time.RFC3339),
		}},
		Status: backupsv1alpha1.BackupJobStatus{Phase: phase},
	}
}

func TestJobsToPrune(t *testing.T) {
	ok, bad, run := backupsv1alpha1.BackupJobPhaseSucceeded, backupsv1alpha1.BackupJobPhaseFailed, backupsv1alpha1.BackupJobPhaseRunning
	jobs := []backupsv1alpha1.BackupJob{
		job("s1", 1, ok), job("s5", 5, ok), job("s3", 3, ok), job("s4", 4, ok), job("s2", 2, ok),
		job("f1", 1, bad), job("f3", 3, bad), job("f2", 2, bad),
		job("r0", 0, run), job("p0", 0, ""),
	}
	var got []string
	for _, j := range JobsToPrune(jobs, 3, 1) {
		got = append(got, j.Name)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != "f1 f2 s1 s2" {
		t.Fatalf("pruned %v, want f1 f2 s1 s2", got)
	}
	if n := len(JobsToPrune(jobs, 0, 0)); n != 8 {
		t.Fatalf("limits of 0 prune every finished job, got %d", n)
	}
	// A limit that did not parse (negative) keeps every job of its kind.
	if n := len(JobsToPrune(jobs, -1, 1)); n != 2 {
		t.Fatalf("a negative limit keeps every Succeeded job, got %d pruned", n)
	}
}
