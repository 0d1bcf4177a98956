package tenantjobs

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is where a tenant Job stands.
type Outcome int

const (
	// Running: neither Complete nor Failed yet.
	Running Outcome = iota
	// Succeeded: the Job completed (staged, inspected, rehearsed).
	Succeeded
	// Refused: the step refused the object (report.ExitRefused, the
	// podFailurePolicy ended the Job): retrying cannot help.
	Refused
	// Failed: the Job gave up otherwise (retries, deadline).
	Failed
)

// OutcomeOf reads the Job's final conditions (a Job suspended, which
// only a tenant does, has failed), and its reason and message
// (cut: the Job lives in a tenant's namespace) when it failed.
func OutcomeOf(j *batchv1.Job) (Outcome, string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Succeeded, ""
		case batchv1.JobFailed:
			if c.Reason == batchv1.JobReasonPodFailurePolicy {
				return Refused, textlimit.Note(c.Reason + ": " + c.Message)
			}
			return Failed, textlimit.Note(c.Reason + ": " + c.Message)
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		// The driver never suspends its Jobs; a tenant that suspends one
		// (its deadline then stops) would hold a slot of the platform's
		// inspections or rehearsals for ever.
		return Failed, "Suspended: the Job was suspended, which the driver never does"
	}
	return Running, ""
}
