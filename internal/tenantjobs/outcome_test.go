package tenantjobs

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

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
		{job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}), Succeeded},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy}), Refused},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded}), Failed},
		{job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded}), Failed},
		{suspended(job()), Failed},
		{suspended(job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})), Succeeded},
	} {
		if got, _ := OutcomeOf(tc.job); got != tc.want {
			t.Errorf("OutcomeOf(%+v) = %v, want %v", tc.job.Status.Conditions, got, tc.want)
		}
	}
}

func suspended(j *batchv1.Job) *batchv1.Job {
	yes := true
	j.Spec.Suspend = &yes
	return j
}
