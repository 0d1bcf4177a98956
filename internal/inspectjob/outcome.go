package inspectjob

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/snapshotinspect"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is where an inspection Job stands.
type Outcome int

const (
	// Running: neither Complete nor Failed yet.
	Running Outcome = iota
	// Inspected: the Job completed; its Pod's report carries the manifest.
	Inspected
	// Refused: the binary refused the object (ExitRefused, the
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
			return Inspected, ""
		case batchv1.JobFailed:
			msg := textlimit.Note(c.Reason + ": " + c.Message)
			if c.Reason == batchv1.JobReasonPodFailurePolicy {
				return Refused, msg
			}
			return Failed, msg
		}
	}
	return Running, ""
}

// ReportOf reads the report the binary left in the termination message of
// the Pod's inspect container once it has terminated. The Pod lives in a
// tenant's namespace: the message is parsed strictly
// (snapshotinspect.ParseReport) and must agree with the container's exit
// code; it is data, never more.
func ReportOf(p *corev1.Pod) (snapshotinspect.Report, error) {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name != ContainerName {
			continue
		}
		t := st.State.Terminated
		if t == nil {
			return snapshotinspect.Report{}, fmt.Errorf("container %s of Pod %s/%s has not terminated", ContainerName, p.Namespace, p.Name)
		}
		r, err := snapshotinspect.ParseReport(t.Message)
		if err != nil {
			return snapshotinspect.Report{}, fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if int32(r.ExitCode()) != t.ExitCode {
			return snapshotinspect.Report{}, fmt.Errorf("Pod %s/%s exited %d but its report says %s", p.Namespace, p.Name, t.ExitCode, r.Outcome)
		}
		return r, nil
	}
	return snapshotinspect.Report{}, fmt.Errorf("Pod %s/%s has no %s container status", p.Namespace, p.Name, ContainerName)
}
