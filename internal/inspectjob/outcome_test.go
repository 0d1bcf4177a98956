package inspectjob

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/snapshotinspect"
)

func podWith(name, message string, exit int32) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: message}}}}}}
}

// ReportOf takes the report of the inspect container when it is one
// well-formed report agreeing with the exit code, and refuses every
// hostile message a tenant's Pod can leave.
func TestReportOfRefusesHostileMessages(t *testing.T) {
	good := snapshotinspect.NewReport(backupsv1alpha1.BackupManifest{Revision: 7, Keys: 2, DBSizeBytes: 20480, Keyspaces: []backupsv1alpha1.KeyspaceManifest{{
		Prefix: "/registry", Objects: 2, Namespaces: 1, Resources: []backupsv1alpha1.ObjectCount{{Name: "namespaces", Count: 1}}, NamespaceNames: []string{"default"}}}}, nil).Line()
	r, err := ReportOf(podWith(ContainerName, good, 0))
	if err != nil || r.Outcome != snapshotinspect.OutcomeInspected || r.Manifest.Revision != 7 {
		t.Fatalf("ReportOf(good) = %+v, %v", r, err)
	}
	refused := `{"outcome":"Refused","reason":"ArtifactChanged","message":"sha256 differs"}`
	if r, err := ReportOf(podWith(ContainerName, refused, 65)); err != nil || r.Outcome != snapshotinspect.OutcomeRefused {
		t.Fatalf("ReportOf(refused) = %+v, %v", r, err)
	}
	for name, pod := range map[string]*corev1.Pod{
		"oversized":               podWith(ContainerName, good+strings.Repeat(" ", 4096), 0),
		"two objects":             podWith(ContainerName, good+good, 0),
		"unknown field":           podWith(ContainerName, strings.Replace(good, `"keys":2`, `"keys":2,"owner":"x"`, 1), 0),
		"negative count":          podWith(ContainerName, strings.Replace(good, `"count":1`, `"count":-1`, 1), 0),
		"negative keys":           podWith(ContainerName, strings.Replace(good, `"keys":2`, `"keys":-2`, 1), 0),
		"inspected but exit 65":   podWith(ContainerName, good, 65),
		"refused but exit 0":      podWith(ContainerName, refused, 0),
		"logs, not a report":      podWith(ContainerName, "panic: runtime error: index out of range\ngoroutine 1", 2),
		"empty":                   podWith(ContainerName, "", 0),
		"another container":       podWith("sidecar", good, 0),
		"still running":           {Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName}}}},
		"no container status":     {},
		"manifest with a refusal": podWith(ContainerName, strings.Replace(good, `"outcome":"Inspected","reason":"Inspected"`, `"outcome":"Refused","reason":"ArtifactCorrupt"`, 1), 65),
	} {
		if r, err := ReportOf(pod); err == nil {
			t.Errorf("%s: ReportOf accepted %+v", name, r)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	job := func(cs ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: cs}}
	}
	for _, tc := range []struct {
		job  *batchv1.Job
		want Outcome
	}{
		{job(), Running},
		{job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}), Running},
		{job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}), Inspected},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy}), Refused},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded}), Failed},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded}), Failed},
	} {
		if got, _ := OutcomeOf(tc.job); got != tc.want {
			t.Errorf("OutcomeOf(%+v) = %v, want %v", tc.job.Status.Conditions, got, tc.want)
		}
	}
}
