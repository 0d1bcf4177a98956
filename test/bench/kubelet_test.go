package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
)

// startInspectionKubelet plays the Job controller and the kubelet for the
// driver's inspection Jobs until b ends: delay after it sees a new Job
// labelled backups.cozystack.io/inspection it creates the Job's Pod (owned by the
// Job, running its template), ends it with report's line as the inspect
// container's termination message, and marks the Job Complete, as
// internal/tenantjobs/inspection's tests do. No container runs: the driver's
// side of an inspection (the Job, the Pod list, the Backup's writes) is
// what is measured, not the snapshot's download.
func startInspectionKubelet(b *testing.B, report inspectionstep.Report, delay time.Duration) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	informers, err := cache.New(env.Config, cache.Options{Scheme: driverscheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := informers.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		b.Fatal(err)
	}
	line := report.Line()
	seen := func(o any) {
		j := o.(*batchv1.Job)
		if _, ok := j.Labels[backupsv1alpha1.InspectionLabel]; !ok || len(j.Status.Conditions) > 0 {
			return
		}
		time.AfterFunc(delay, func() {
			if err := finishInspection(ctx, j, line, int32(report.ExitCode())); err != nil && ctx.Err() == nil {
				panic(fmt.Sprintf("kubelet: inspection Job %s/%s: %v", j.Namespace, j.Name, err))
			}
		})
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("kubelet: caches did not sync")
	}
}

// finishInspection creates j's Pod, ends it with line and marks j Complete.
func finishInspection(ctx context.Context, j *batchv1.Job, line string, exit int32) error {
	yes := true
	tmpl := j.Spec.Template.Spec
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, GenerateName: j.Name + "-",
			Labels:          map[string]string{batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: tmpl.Containers, Volumes: tmpl.Volumes},
	}
	if err := fast.Create(ctx, pod); err != nil {
		return fmt.Errorf("create its Pod: %w", err)
	}
	c := tmpl.Containers[0]
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: c.Name, Image: c.Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: line}},
	}}}
	if err := fast.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("end its Pod: %w", err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &batchv1.Job{}
		if err := fast.Get(ctx, client.ObjectKeyFromObject(j), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		now := metav1.Now()
		cur.Status.StartTime, cur.Status.CompletionTime, cur.Status.Succeeded = &now, &now, 1
		cur.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
		}
		return fast.Status().Update(ctx, cur)
	})
}
