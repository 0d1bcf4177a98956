package operator

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// kubelet stands in for the node agent, for the snapshot agent's Pods only
// (those the Job controller creates from the stand-in's Jobs): it resolves
// the container's secretKeyRefs, and reports CreateContainerConfigError and
// waits while one is missing, as a kubelet does; otherwise it runs the
// agent once per Pod and reports the Pod Running, then Succeeded or Failed,
// which the Job controller turns into the Job's status.
type kubelet struct {
	client client.Client
	reader client.Reader
	fleet  *Fleet
	agents *SnapshotStatsStore
	// s3RootCAs verify the S3 endpoint the agents write to.
	s3RootCAs *x509.CertPool
}

func (k *kubelet) setup(mgr ctrl.Manager) error {
	agentPods := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[snapshotAgentLabel] == snapshotAgentLabelValue
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-kubelet").
		For(&corev1.Pod{}, builder.WithPredicates(agentPods)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(k.podsUsingSecret)).
		Complete(k)
}

// podsUsingSecret wakes the agent Pods of the Secret's namespace that have
// not started.
func (k *kubelet) podsUsingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	return pendingPods(ctx, k.client, o.GetNamespace(), client.MatchingLabels{snapshotAgentLabel: snapshotAgentLabelValue})
}

// pendingPods are the Pods of ns (matching opts) that have not started.
func pendingPods(ctx context.Context, c client.Reader, ns string, opts ...client.ListOption) []reconcile.Request {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, append([]client.ListOption{client.InNamespace(ns)}, opts...)...); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return reqs
}

// Reconcile starts one agent Pod's container when it can start.
func (k *kubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	if err := k.client.Get(ctx, req.NamespacedName, &pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ctrl.Result{}, nil
	}
	if k.agents.started(pod.UID) {
		return ctrl.Result{}, nil
	}
	env, err := k.environment(ctx, &pod)
	if err != nil {
		return ctrl.Result{}, k.setWaiting(ctx, &pod, reasonCreateContainerConfigError, err.Error())
	}
	if !k.agents.start(pod.UID) {
		return ctrl.Result{}, nil
	}
	if err := k.setRunning(ctx, &pod); err != nil {
		return ctrl.Result{}, err
	}
	snapshot := types.NamespacedName{Namespace: pod.Namespace, Name: env[envSnapshotName]}
	go k.run(pod.DeepCopy(), env, snapshot)
	return ctrl.Result{}, nil
}

// run is the container: the agent, then the Pod's terminal status.
func (k *kubelet) run(pod *corev1.Pod, env map[string]string, snapshot types.NamespacedName) {
	ctx := context.Background()
	log := logf.Log.WithName("sandbox-snapshot-agent").WithValues("snapshot", snapshot.String(), "pod", pod.Name)
	started := time.Now()
	art, n, err := snapshotAgent{fleet: k.fleet, namespace: pod.Namespace, env: env, rootCAs: k.s3RootCAs}.run(ctx)
	res := agentResult{artifact: art, err: err, stats: SnapshotStats{Bytes: n, Duration: time.Since(started)}}
	k.agents.finish(pod.UID, types.UID(env[envSnapshotUID]), res)
	if err != nil {
		log.Info("snapshot failed", "error", err.Error())
	} else {
		log.Info(fmt.Sprintf("snapshot uploaded: uri=%q size=%d sha256=%s", art.URI, art.SizeBytes, art.Checksum[len("sha256:"):]),
			"took", res.stats.Duration.String())
	}
	if perr := k.setTerminated(ctx, pod, err); perr != nil {
		log.Error(perr, "report Pod status")
	}
}

// environment resolves the container's env as the kubelet would; a
// non-optional secretKeyRef to a missing Secret or key is an error.
func (k *kubelet) environment(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	env := map[string]string{}
	secrets := map[string]*corev1.Secret{}
	for _, e := range pod.Spec.Containers[0].Env {
		ref := (*corev1.SecretKeySelector)(nil)
		if e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
		if ref == nil {
			env[e.Name] = e.Value
			continue
		}
		s, ok := secrets[ref.Name]
		if !ok {
			s = &corev1.Secret{}
			if err := k.reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, s); err != nil {
				if isNotFound(err) {
					return nil, fmt.Errorf("secret %q not found", ref.Name)
				}
				return nil, err
			}
			secrets[ref.Name] = s
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
		}
		env[e.Name] = string(v)
	}
	return env, nil
}

func (k *kubelet) setWaiting(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	c := pod.Spec.Containers[0]
	want := []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg},
	}}}
	if len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Waiting != nil &&
		*pod.Status.ContainerStatuses[0].State.Waiting == *want[0].State.Waiting {
		return nil
	}
	base := pod.DeepCopy()
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = want
	return client.IgnoreNotFound(k.client.Status().Patch(ctx, pod, client.MergeFrom(base)))
}

func (k *kubelet) setRunning(ctx context.Context, pod *corev1.Pod) error {
	base := pod.DeepCopy()
	now := metav1.Now()
	c := pod.Spec.Containers[0]
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	return client.IgnoreNotFound(k.client.Status().Patch(ctx, pod, client.MergeFrom(base)))
}

func (k *kubelet) setTerminated(ctx context.Context, pod *corev1.Pod, runErr error) error {
	var live corev1.Pod
	if err := k.reader.Get(ctx, client.ObjectKeyFromObject(pod), &live); err != nil {
		return client.IgnoreNotFound(err)
	}
	base := live.DeepCopy()
	now := metav1.Now()
	c := live.Spec.Containers[0]
	term := &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}
	live.Status.Phase = corev1.PodSucceeded
	if runErr != nil {
		live.Status.Phase = corev1.PodFailed
		term.ExitCode, term.Reason, term.Message = 1, "Error", runErr.Error()
	}
	if cs := live.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Running != nil {
		term.StartedAt = cs[0].State.Running.StartedAt
	}
	live.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Started: ptr(false),
		State: corev1.ContainerState{Terminated: term}}}
	return client.IgnoreNotFound(k.client.Status().Patch(ctx, &live, client.MergeFrom(base)))
}

func ptr[T any](v T) *T { return &v }

// SnapshotStats is how long a snapshot agent took and how much it moved.
type SnapshotStats struct {
	Bytes    int64
	Duration time.Duration
}

type agentResult struct {
	artifact etcdv1alpha2.SnapshotArtifact
	stats    SnapshotStats
	err      error
}

// SnapshotStatsStore holds what each agent Pod reported (the operator reads
// it from the Pod's log) and, by snapshot, what it moved.
type SnapshotStatsStore struct {
	mu     sync.Mutex
	runs   map[types.UID]bool
	byPod  map[types.UID]agentResult
	bySnap map[types.UID]SnapshotStats
}

func newSnapshotStatsStore() *SnapshotStatsStore {
	return &SnapshotStatsStore{runs: map[types.UID]bool{}, byPod: map[types.UID]agentResult{}, bySnap: map[types.UID]SnapshotStats{}}
}

// Stats returns the timing of the successful agent run for a snapshot UID.
func (s *SnapshotStatsStore) Stats(snapshotUID string) (SnapshotStats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.bySnap[types.UID(snapshotUID)]
	return st, ok
}

func (s *SnapshotStatsStore) started(pod types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[pod]
}

// start claims a Pod's single run; false if it already ran or runs.
func (s *SnapshotStatsStore) start(pod types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[pod] {
		return false
	}
	s.runs[pod] = true
	return true
}

func (s *SnapshotStatsStore) finish(pod, snapshot types.UID, res agentResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byPod[pod] = res
	if res.err == nil {
		s.bySnap[snapshot] = res.stats
	}
}

func (s *SnapshotStatsStore) result(pod types.UID) (agentResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.byPod[pod]
	return res, ok
}
