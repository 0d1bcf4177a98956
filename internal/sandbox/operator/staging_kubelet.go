package operator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
)

// stagingKubelet stands in for the node agent for the driver's restore
// staging Pods and its backup inspection Pods: Pods labelled
// backupsv1alpha1.StagingLabel or InspectionLabel, or created by a Job so
// labelled (see runsLabel). Unlike the snapshot agent (simulated in process), their
// containers run as real local processes (Options.Executables maps the
// image's command to a local binary, bin/etcd-stage for /etcd-stage), with
// claims mounted as folders of Volumes and the termination message file
// read back, so the real Job controller sees exactly what a kubelet would
// report: init containers in order (the first failure fails the Pod),
// then the containers, each ending with its exit code and message, which
// the Job's podFailurePolicy acts on. A missing Secret, ConfigMap or key
// keeps the Pod Pending with CreateContainerConfigError, a missing claim
// keeps it unschedulable, until they appear. In container mode
// (Options.Containers) the containers run from their images with podman
// instead, with the Pod's security context, fsGroup and limits, and
// their volumes bind-mounted at their own paths.
type stagingKubelet struct {
	podAPI
	podRuns
	volumes     *Volumes
	executables map[string]string
	podsDir     string
	// containers, when set, runs the Pods' containers from their images
	// (container mode) instead of executables.
	containers *container.Runtime
	// node is what the node gives every container.
	node nodeServices
}

func (k *stagingKubelet) setup(mgr ctrl.Manager) error {
	k.podRuns.init()
	maybeStaging := predicate.NewPredicateFuncs(func(o client.Object) bool {
		if runsLabel(o.GetLabels()) {
			return true
		}
		owner := metav1.GetControllerOf(o)
		return owner != nil && owner.Kind == "Job" && o.GetLabels()[snapshotAgentLabel] == ""
	})
	wake := handler.EnqueueRequestsFromMapFunc(k.waitingPods)
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-kubelet-staging").
		For(&corev1.Pod{}, builder.WithPredicates(maybeStaging)).
		Watches(&corev1.Secret{}, wake).
		Watches(&corev1.ConfigMap{}, wake).
		Watches(&corev1.PersistentVolumeClaim{}, wake).
		Complete(k)
}

// waitingPods wakes the Pods of the object's namespace that have not
// started (the Reconcile filters the ones that are not staging Pods).
func (k *stagingKubelet) waitingPods(ctx context.Context, o client.Object) []reconcile.Request {
	return pendingPods(ctx, k.client, o.GetNamespace())
}

// Reconcile starts a staging Pod once it can start, and stops its
// containers when it is deleted.
func (k *stagingKubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	err := k.client.Get(ctx, req.NamespacedName, &pod)
	if err != nil && !isNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil || !pod.DeletionTimestamp.IsZero() {
		k.stop(req.NamespacedName, "")
		return ctrl.Result{}, nil
	}
	k.stop(req.NamespacedName, pod.UID) // an earlier Pod of the same name
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || k.started(pod.UID) {
		return ctrl.Result{}, nil
	}
	if staging, err := k.isStaging(ctx, &pod); err != nil || !staging {
		return ctrl.Result{}, err
	}
	podDir := filepath.Join(k.podsDir, pod.Namespace, pod.Name+"-"+string(pod.UID))
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return ctrl.Result{}, err
	}
	plan, err := planner{reader: k.reader, volumes: k.volumes, executables: k.executables, podDir: podDir, containers: k.containers, node: k.node}.plan(ctx, &pod)
	var nr *notReady
	if errors.As(err, &nr) {
		return ctrl.Result{}, k.patchStatus(ctx, &pod, pendingStatus(&pod, nr))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := k.bind(ctx, &pod); err != nil {
		return ctrl.Result{}, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	if !k.claim(req.NamespacedName, podRun{uid: pod.UID, stop: stop}) {
		stop()
		return ctrl.Result{}, nil
	}
	run := &stagingRun{kubelet: k, pod: pod.DeepCopy(), plan: plan, started: metav1.Now()}
	plan.keepFresh(runCtx)
	if err := k.patchStatus(ctx, &pod, run.status()); err != nil {
		k.stop(req.NamespacedName, "")
		return ctrl.Result{}, err
	}
	go run.run(runCtx)
	return ctrl.Result{}, nil
}

// runsLabel reports whether labels mark a Pod (or Job) this kubelet runs:
// a restore's staging, a Backup's inspection or a dry run's rehearsal,
// all of which run the driver's /etcd-stage.
func runsLabel(labels map[string]string) bool {
	_, staging := labels[backupsv1alpha1.StagingLabel]
	_, inspection := labels[backupsv1alpha1.InspectionLabel]
	_, rehearsal := labels[backupsv1alpha1.RehearsalLabel]
	return staging || inspection || rehearsal
}

// isStaging reports whether the Pod or its controlling Job carries the
// staging or the inspection label.
func (k *stagingKubelet) isStaging(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if runsLabel(pod.Labels) {
		return true, nil
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" {
		return false, nil
	}
	var job batchv1.Job
	if err := k.reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: owner.Name}, &job); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return runsLabel(job.Labels) && job.UID == owner.UID, nil
}

// pendingStatus is a Pod that cannot start: unschedulable (no container
// statuses), or one container that cannot be created.
func pendingStatus(pod *corev1.Pod, nr *notReady) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodPending}
	if nr.container == "" {
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: nr.reason, Message: nr.message, LastTransitionTime: metav1.Now()}}
		return st
	}
	waiting := func(c corev1.Container, init bool) corev1.ContainerStatus {
		w := &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		if !init && len(pod.Spec.InitContainers) == 0 {
			w.Reason = "ContainerCreating"
		}
		if c.Name == nr.container {
			w = &corev1.ContainerStateWaiting{Reason: nr.reason, Message: nr.message}
		}
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: w}}
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c, true))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, waiting(c, false))
	}
	st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	return st
}

// stagingRun is one Pod's run: its containers' states as they progress.
type stagingRun struct {
	kubelet *stagingKubelet
	pod     *corev1.Pod
	plan    podPlan
	started metav1.Time

	mu   sync.Mutex
	init []corev1.ContainerState
	main []corev1.ContainerState
}

// run runs the init containers in order, stopping at the first failure
// (restartPolicy Never: the Pod fails), then the containers together.
func (r *stagingRun) run(ctx context.Context) {
	key := client.ObjectKeyFromObject(r.pod)
	defer r.kubelet.finished(key, r.pod.UID)
	log := logf.Log.WithName("sandbox-kubelet-staging").WithValues("pod", key.String())
	report := func() {
		if err := r.kubelet.patchStatus(context.Background(), r.pod, r.status()); err != nil {
			log.Error(err, "report Pod status")
		}
	}
	for i, c := range r.plan.init {
		r.set(&r.init, i, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
		report()
		term := c.run(ctx)
		r.set(&r.init, i, corev1.ContainerState{Terminated: &term})
		log.Info("init container ended", "container", c.name, "exitCode", term.ExitCode)
		if term.ExitCode != 0 {
			report()
			return
		}
	}
	var wg sync.WaitGroup
	for i, c := range r.plan.main {
		r.set(&r.main, i, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
		wg.Go(func() {
			term := c.run(ctx)
			r.set(&r.main, i, corev1.ContainerState{Terminated: &term})
			log.Info("container ended", "container", c.name, "exitCode", term.ExitCode)
		})
	}
	report()
	wg.Wait()
	report()
}

func (r *stagingRun) set(states *[]corev1.ContainerState, i int, s corev1.ContainerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(*states) <= i {
		*states = append(*states, corev1.ContainerState{})
	}
	(*states)[i] = s
}

// status derives the Pod's status from its containers' states.
func (r *stagingRun) status() corev1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodPending, StartTime: &r.started, HostIP: "127.0.0.1", PodIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: r.started}}}
	initFailed, initDone := false, true
	for i, c := range r.pod.Spec.InitContainers {
		s := stateAt(r.init, i, "PodInitializing")
		initFailed = initFailed || (s.Terminated != nil && s.Terminated.ExitCode != 0)
		initDone = initDone && s.Terminated != nil && s.Terminated.ExitCode == 0
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c, s, imageOf(r.plan.init, i)))
	}
	running, failed, done := false, false, true
	for i, c := range r.pod.Spec.Containers {
		reason := "ContainerCreating"
		if len(r.pod.Spec.InitContainers) > 0 {
			reason = "PodInitializing"
		}
		s := stateAt(r.main, i, reason)
		running = running || s.Running != nil
		failed = failed || (s.Terminated != nil && s.Terminated.ExitCode != 0)
		done = done && s.Terminated != nil
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c, s, imageOf(r.plan.main, i)))
	}
	switch {
	case initFailed:
		st.Phase = corev1.PodFailed
	case !initDone:
		st.Phase = corev1.PodPending
	case done && failed:
		st.Phase = corev1.PodFailed
	case done:
		st.Phase = corev1.PodSucceeded
	case running:
		st.Phase = corev1.PodRunning
	}
	ready := corev1.ConditionFalse
	if st.Phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	initialized := corev1.ConditionFalse
	if initDone {
		initialized = corev1.ConditionTrue
	}
	st.Conditions = append(st.Conditions,
		corev1.PodCondition{Type: corev1.PodInitialized, Status: initialized, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodReady, Status: ready, LastTransitionTime: now})
	return st
}

func stateAt(states []corev1.ContainerState, i int, waiting string) corev1.ContainerState {
	if i < len(states) && (states[i].Running != nil || states[i].Terminated != nil) {
		return states[i]
	}
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}
}

// containerStatus is c's status in state s; imageID is the image it ran
// (container mode), empty for its image's name.
func containerStatus(c corev1.Container, s corev1.ContainerState, imageID string) corev1.ContainerStatus {
	running := s.Running != nil
	if imageID == "" {
		imageID = c.Image
	}
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: imageID, State: s, Ready: running, Started: &running}
}

// imageOf is the image ID the i-th of the processes ran, if known.
func imageOf(procs []containerProcess, i int) string {
	if i < len(procs) {
		return procs[i].imageID
	}
	return ""
}
