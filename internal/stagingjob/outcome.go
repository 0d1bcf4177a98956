package stagingjob

import (
	"encoding/json"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is where a staging Job stands.
type Outcome int

const (
	// Running: neither Complete nor Failed yet.
	Running Outcome = iota
	// Staged: every file is on the claim.
	Staged
	// Refused: the staging binary refused an artifact (ExitRefused, the
	// podFailurePolicy ended the Job): retrying cannot help.
	Refused
	// Failed: the Job gave up otherwise (retries, deadline).
	Failed
)

// OutcomeOf reads the Job's final conditions, and its reason and message
// when it failed.
func OutcomeOf(j *batchv1.Job) (Outcome, string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Staged, ""
		case batchv1.JobFailed:
			if c.Reason == batchv1.JobReasonPodFailurePolicy {
				return Refused, c.Reason + ": " + c.Message
			}
			return Failed, c.Reason + ": " + c.Message
		}
	}
	return Running, ""
}

// report is the part of the staging binary's termination message the
// driver shows.
type report struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PodReport returns the reason and message the staging binary left in the
// termination message of a failed container of p ("" when none). The
// message is the Pod's, so it is cut and treated as text only.
func PodReport(p *corev1.Pod) (reason, message string) {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, st := range statuses {
		t := st.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		line := strings.TrimSpace(t.Message)
		if i := strings.LastIndexByte(line, '\n'); i >= 0 {
			line = line[i+1:]
		}
		var r report
		if json.Unmarshal([]byte(line), &r) == nil && r.Message != "" {
			return textlimit.Value(r.Reason), textlimit.Note(r.Message)
		}
		return "", textlimit.Note(line)
	}
	return "", ""
}
