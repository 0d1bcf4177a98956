package tenantjobs

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// ReadReport reads into r the report of job's newest Pod that the Job
// controls and that runs its containers (MyPod), from the termination
// message of its container (ReportOf). Pods are listed by the label the
// Job controller gives them, through c (read live: Pods are not cached).
func ReadReport(ctx context.Context, c client.Reader, job *batchv1.Job, container string, r report.Report) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return fmt.Errorf("list the Pods of Job %s: %w", job.Name, err)
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !MyPod(p, job) {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&p.CreationTimestamp) && newest.Name < p.Name) {
			newest = p
		}
	}
	if newest == nil {
		return fmt.Errorf("Job %s has no Pod with a report", job.Name)
	}
	return ReportOf(newest, container, r)
}

// ReportOf reads into r the report container of Pod p left when it
// last terminated: its state, or, while a container that restarts
// (the capture's) runs or waits again, its last state. The Pod lives in
// a tenant's namespace: the termination message is parsed strictly
// (report.Parse) and must agree with the container's exit code
// (report.ExitCode), since the step writes the report that goes with how
// it exits; it is data, never more.
func ReportOf(p *corev1.Pod, container string, r report.Report) error {
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if st.Name != container {
			continue
		}
		t := st.State.Terminated
		if t == nil {
			t = st.LastTerminationState.Terminated
		}
		if t == nil {
			return fmt.Errorf("container %s of Pod %s/%s has not terminated", container, p.Namespace, p.Name)
		}
		if err := report.Parse(t.Message, r); err != nil {
			return fmt.Errorf("Pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if int32(report.ExitCode(r)) != t.ExitCode {
			return fmt.Errorf("Pod %s/%s exited %d but its report says %s", p.Namespace, p.Name, t.ExitCode, report.EnvelopeOf(r).Outcome)
		}
		return nil
	}
	return fmt.Errorf("Pod %s/%s has no %s container status", p.Namespace, p.Name, container)
}
