package testenv

import (
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// stagingJobs plays the Job controller and the staging binary for the
// restores' staging Jobs (no Pods run in envtest suites): each one
// completes, or fails as a refused artifact does, at once.
func (op *Operator) stagingJobs(ctx context.Context, refuse func(string) bool) {
	var jobs batchv1.JobList
	if op.c.List(ctx, &jobs, client.InNamespace(op.ns), client.HasLabels{backupsv1alpha1.StagingLabel}) != nil {
		return
	}
	// HoldStaging is read after the list: a test sets it before it starts
	// the restore, so any staging Job listed here was made after the hold
	// (read before the list, as it once was, a step that began before the
	// hold completed the staging Job the driver made meanwhile).
	op.mu.Lock()
	hold := op.HoldStaging
	op.mu.Unlock()
	if hold {
		return
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if len(j.Status.Conditions) > 0 {
			continue
		}
		refused := false
		for _, c := range append(append([]corev1.Container{}, j.Spec.Template.Spec.InitContainers...), j.Spec.Template.Spec.Containers...) {
			if refuse != nil && refuse(argValue(c.Args, "--key")) {
				refused = true
			}
		}
		now := metav1.Now()
		j.Status.StartTime = &now
		if refused {
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy,
					Message: "Container stage for pod staging exited with a non-zero exit code 65 matching FailJob rule at index 0", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy,
					Message: "Container stage for pod staging exited with a non-zero exit code 65 matching FailJob rule at index 0", LastTransitionTime: now, LastProbeTime: now},
			}
		} else {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			}
		}
		_ = op.c.Status().Update(ctx, j)
	}
}

// bootstrapKey is the S3 key a re-created cluster restores from: its S3
// source's, or, for a staging claim, the key the staging Job copied into
// the file it names.
func (op *Operator) bootstrapKey(ctx context.Context, c *etcdv1alpha2.EtcdCluster) string {
	src := c.Spec.Bootstrap.Restore.Source
	if src.S3 != nil {
		return src.S3.Key
	}
	if src.PVC == nil {
		return ""
	}
	// The staging Job that wrote the claim: the one mounting it (the Job
	// and its claim have names of their own).
	var jobs batchv1.JobList
	if op.c.List(ctx, &jobs, client.InNamespace(op.ns), client.HasLabels{backupsv1alpha1.StagingLabel}) != nil {
		return ""
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		mounts := false
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == src.PVC.ClaimName {
				mounts = true
			}
		}
		if !mounts {
			continue
		}
		for _, ctr := range append(append([]corev1.Container{}, j.Spec.Template.Spec.InitContainers...), j.Spec.Template.Spec.Containers...) {
			// (Matched by suffix: the staging step's own tests import this
			// package, so it cannot import the staging Job's constants.)
			if strings.HasSuffix(argValue(ctr.Args, "--out"), "/"+src.PVC.SubPath) {
				return argValue(ctr.Args, "--key")
			}
		}
	}
	return ""
}

func argValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}
