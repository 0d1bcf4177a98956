package operator

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podAPI is how a kubelet stand-in writes a Pod: binding and status.
type podAPI struct {
	client client.Client
	reader client.Reader
}

// podRuns are a kubelet stand-in's running Pods.
type podRuns struct {
	mu   sync.Mutex
	runs map[types.NamespacedName]podRun
	// ran are the Pods (UIDs) ever started: a Pod runs once, even when a
	// stale cache still shows it Running after its run ended.
	ran map[types.UID]bool
	// wg counts the tracked runs' goroutines (stopAll waits for them).
	wg sync.WaitGroup
}

// podRun is a Pod whose containers run: the Pod's UID and what stops them.
type podRun struct {
	uid  types.UID
	stop context.CancelFunc
}

func (k *podRuns) init() {
	k.runs, k.ran = map[types.NamespacedName]podRun{}, map[types.UID]bool{}
}

func (k *podRuns) started(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ran[uid]
}

// claim records a Pod's single run; false if it already ran or runs.
func (k *podRuns) claim(pod types.NamespacedName, r podRun) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ran[r.uid] {
		return false
	}
	k.ran[r.uid] = true
	k.runs[pod] = r
	return true
}

// stop kills the containers of the Pod's run unless it is the run of keep.
func (k *podRuns) stop(pod types.NamespacedName, keep types.UID) {
	k.mu.Lock()
	r, ok := k.runs[pod]
	if ok && r.uid != keep {
		delete(k.runs, pod)
	}
	k.mu.Unlock()
	if ok && r.uid != keep {
		r.stop()
	}
}

// finished forgets a run that ended by itself.
func (k *podRuns) finished(pod types.NamespacedName, uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.runs[pod]; ok && r.uid == uid {
		delete(k.runs, pod)
	}
}

// patchStatus writes st as the live Pod's status, unless the Pod is gone
// or was replaced.
// NodeName is the node the kubelet stand-in runs staging Pods on.
const NodeName = "sandbox-node"

// bind assigns the Pod to NodeName (the pods/binding subresource, as the
// scheduler does) before it runs, as a kubelet runs only Pods bound to
// its node. A bound Pod holds the claims it names: PVC protection keeps a
// deleted claim until no bound Pod names it, whatever the Pod's phase.
func (k podAPI) bind(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName != "" {
		return nil
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
	if err := k.client.SubResource("binding").Create(ctx, pod, b); err != nil && !isNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("bind staging Pod %s/%s to %s: %w", pod.Namespace, pod.Name, NodeName, err)
	}
	return nil
}

func (k podAPI) patchStatus(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus) error {
	var live corev1.Pod
	if err := k.reader.Get(ctx, client.ObjectKeyFromObject(pod), &live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if live.UID != pod.UID {
		return nil
	}
	base := live.DeepCopy()
	live.Status = st
	return client.IgnoreNotFound(k.client.Status().Patch(ctx, &live, client.MergeFrom(base)))
}

// stopping stops the run of the Pod uid and reports whether it ever ran
// here: its run's end, not the caller, then finishes the Pod.
func (k *podRuns) stopping(pod types.NamespacedName, uid types.UID) bool {
	k.stop(pod, "")
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ran[uid]
}

// track runs fn(ctx) in a goroutine stopAll waits for.
func (k *podRuns) track(fn func(context.Context), ctx context.Context) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		fn(ctx)
	}()
}

// stopAll stops every run and waits for the tracked ones to end.
func (k *podRuns) stopAll() {
	k.mu.Lock()
	runs := k.runs
	k.runs = map[types.NamespacedName]podRun{}
	k.mu.Unlock()
	for _, r := range runs {
		r.stop()
	}
	k.wg.Wait()
}
