package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The kubelet's restart back-off: 10 s doubling to 5 min, reset once a
// container has run 10 min.
const (
	restartBackoff    = 10 * time.Second
	maxRestartBackoff = 5 * time.Minute
	backoffReset      = 10 * time.Minute
)

// restartingRun is a Pod with restartPolicy Always: each container is
// restarted whenever it exits, after the back-off, until the Pod is
// deleted; its status counts the restarts and keeps the last exit in
// lastState, as a kubelet reports it.
type restartingRun struct {
	kubelet *captureKubelet
	pod     *corev1.Pod
	plan    podPlan
	started metav1.Time

	mu         sync.Mutex
	containers []restartingContainer
}

// restartingContainer is one container's state as reported.
type restartingContainer struct {
	state, last corev1.ContainerState
	restarts    int32
}

func newRestartingRun(k *captureKubelet, pod *corev1.Pod, plan podPlan) *restartingRun {
	r := &restartingRun{kubelet: k, pod: pod, plan: plan, started: metav1.Now(), containers: make([]restartingContainer, len(plan.main))}
	for i := range r.containers {
		r.containers[i].state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	return r
}

// run runs every container until ctx ends (the Pod deleted, or the
// sandbox stopping), then reports the Pod's final status and, if it was
// deleted, removes it.
func (r *restartingRun) run(ctx context.Context) {
	key := client.ObjectKeyFromObject(r.pod)
	log := logf.Log.WithName("sandbox-kubelet-capture").WithValues("pod", key.String())
	var wg sync.WaitGroup
	for i, c := range r.plan.main {
		wg.Go(func() { r.keep(ctx, i, c, log) })
	}
	wg.Wait()
	r.kubelet.finished(key, r.pod.UID)
	bg := context.Background()
	if err := r.kubelet.patchStatus(bg, r.pod, r.status()); err != nil {
		log.Error(err, "report Pod status")
	}
	var live corev1.Pod
	if err := r.kubelet.reader.Get(bg, key, &live); err == nil && live.UID == r.pod.UID && !live.DeletionTimestamp.IsZero() {
		if err := r.kubelet.confirmDeletion(bg, &live); err != nil {
			log.Error(err, "remove the deleted Pod")
		}
	}
}

// keep runs container i, again after each exit with the back-off.
func (r *restartingRun) keep(ctx context.Context, i int, c containerProcess, log logr.Logger) {
	backoff := restartBackoff
	for {
		r.set(i, func(s *restartingContainer) {
			s.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		})
		r.report()
		began := time.Now()
		term := c.run(ctx)
		log.Info("container ended", "container", c.name, "exitCode", term.ExitCode)
		if ctx.Err() != nil {
			r.set(i, func(s *restartingContainer) { s.state = corev1.ContainerState{Terminated: &term} })
			return
		}
		if time.Since(began) > backoffReset {
			backoff = restartBackoff
		}
		r.set(i, func(s *restartingContainer) {
			s.restarts++
			s.last = corev1.ContainerState{Terminated: &term}
			s.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, c.name, r.pod.Name, r.pod.Namespace, r.pod.UID)}}
		})
		r.report()
		wait := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			wait.Stop()
			r.set(i, func(s *restartingContainer) { s.state = s.last })
			return
		case <-wait.C:
		}
		backoff = min(2*backoff, maxRestartBackoff)
	}
}

func (r *restartingRun) set(i int, f func(*restartingContainer)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.containers[i])
}

func (r *restartingRun) report() {
	if err := r.kubelet.patchStatus(context.Background(), r.pod, r.status()); err != nil {
		logf.Log.WithName("sandbox-kubelet-capture").Error(err, "report Pod status", "pod", r.pod.Namespace+"/"+r.pod.Name)
	}
}

// status is the Pod's status: Running while its containers are kept,
// Succeeded or Failed once they all ended for good (the Pod deleted).
func (r *restartingRun) status() corev1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &r.started, HostIP: "127.0.0.1", PodIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: r.started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: r.started}}}
	ready, ended, failed := true, true, false
	for i, c := range r.pod.Spec.Containers {
		s := r.containers[i]
		cs := containerStatus(c, s.state, imageOf(r.plan.main, i))
		cs.RestartCount, cs.LastTerminationState = s.restarts, s.last
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		ready = ready && s.state.Running != nil
		ended = ended && s.state.Terminated != nil
		failed = failed || (s.state.Terminated != nil && s.state.Terminated.ExitCode != 0)
	}
	switch {
	case ended && failed:
		st.Phase = corev1.PodFailed
	case ended:
		st.Phase = corev1.PodSucceeded
	}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	st.Conditions = append(st.Conditions,
		corev1.PodCondition{Type: corev1.ContainersReady, Status: cond, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodReady, Status: cond, LastTransitionTime: now})
	return st
}
