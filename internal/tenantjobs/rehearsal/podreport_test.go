package rehearsal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// A Pod of the rehearsal Job whose report disagrees with how its container
// ended (a refusal written by a container that exited 0) is not read: the
// binary writes the report that goes with its exit code.
func TestAReportThatDisagreesWithItsExitCodeIsRefused(t *testing.T) {
	const uid = "0b8a6d2e-1111-2222-3333-444455556666"
	want := Build(Spec{JobName: "etcd-rehearsal-x", Namespace: "tenant-a", RestoreJobName: "rj", RestoreJobUID: uid,
		Image: "ghcr.io/x/driver:v1", Object: stagingstep.Object{Endpoint: "https://s3.example.com", Bucket: "b", Key: "k.db",
			SecretName: "creds", Size: 1 << 20, SHA256: "sha256:" + strings.Repeat("ab", 32)}, LiveRevision: 1500, Deadline: time.Hour},
		metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: "rj", UID: uid})
	job := want.DeepCopy()
	job.UID = "job-uid"
	yes := true
	// labels are the Pod's as the Job controller gives them.
	labels := map[string]string{batchv1.ControllerUidLabel: string(job.UID)}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := func(rep step.Report, exit int32) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "p", Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: &yes}}},
			Spec: *job.Spec.Template.Spec.DeepCopy(),
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: rep.Line()}}}}},
		}
	}
	refused := step.Failure(report.Refused, "ArtifactChanged", errors.New("sha256 differs"))
	for name, tc := range map[string]struct {
		pod *corev1.Pod
		ok  bool
	}{
		"as the binary ends":        {pod(refused, int32(refused.ExitCode())), true},
		"a refusal that exited 0":   {pod(refused, 0), false},
		"a refusal that exited 137": {pod(refused, 137), false},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(driverscheme.New()).WithObjects(tc.pod).Build()
			var rep step.Report
			err := tenantjobs.ReadReport(context.Background(), c, job, ContainerName, &rep)
			if (err == nil) != tc.ok {
				t.Fatalf("ReadReport error %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
