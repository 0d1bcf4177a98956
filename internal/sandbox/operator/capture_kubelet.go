package operator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
)

// waitRetry is how soon a capture Pod that cannot start yet (its
// ServiceAccount, its kube-root-ca.crt not there yet) is tried again.
const waitRetry = 2 * time.Second

// captureKubelet stands in for the node agent for the driver's
// point-in-time capture Pods, and only those: Pods of a ReplicaSet of a
// Deployment controlled by a CaptureProgress, carrying the capture's
// labels (keeper.Labels) for that record's name, whose one container runs
// `/etcd-stage capture`. It runs them as a kubelet runs a Deployment's
// Pod: bound to NodeName, their Secret and projected volumes written (a
// service-account token requested for the Pod and renewed), the node's
// services given (nodeServices), the container restarted with the
// kubelet's back-off whenever it exits (restartPolicy Always), and on the
// Pod's deletion SIGTERM, the grace period, a kill, the final status and
// the Pod's removal (a graceful delete of a bound Pod waits for its
// kubelet).
type captureKubelet struct {
	podAPI
	podRuns
	executables map[string]string
	podsDir     string
	containers  *container.Runtime
	node        nodeServices
}

func (k *captureKubelet) setup(mgr ctrl.Manager) error {
	k.podRuns.init()
	maybeCapture := predicate.NewPredicateFuncs(func(o client.Object) bool {
		owner := metav1.GetControllerOf(o)
		return o.GetLabels()[keeper.CaptureLabel] != "" && owner != nil && owner.Kind == "ReplicaSet"
	})
	wake := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return pendingPods(ctx, k.client, o.GetNamespace(), client.HasLabels{keeper.CaptureLabel})
	})
	if err := mgr.Add(k); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-kubelet-capture").
		For(&corev1.Pod{}, builder.WithPredicates(maybeCapture)).
		Watches(&corev1.Secret{}, wake).
		Watches(&corev1.ConfigMap{}, wake).
		Complete(k)
}

// Start waits for the manager's end and then stops every capture it runs
// (the sandbox stopping is a node going down: the Pods stay).
func (k *captureKubelet) Start(ctx context.Context) error {
	<-ctx.Done()
	k.stopAll()
	return nil
}

// Reconcile starts a capture Pod once it can start, and stops it when it
// is deleted.
func (k *captureKubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	err := k.client.Get(ctx, req.NamespacedName, &pod)
	if err != nil && !isNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil {
		k.stop(req.NamespacedName, "")
		return ctrl.Result{}, nil
	}
	if !pod.DeletionTimestamp.IsZero() {
		if !k.stopping(req.NamespacedName, pod.UID) && pod.Spec.NodeName == NodeName {
			// Never started here: nothing to stop.
			return ctrl.Result{}, k.confirmDeletion(ctx, &pod)
		}
		return ctrl.Result{}, nil
	}
	k.stop(req.NamespacedName, pod.UID) // an earlier Pod of the same name
	if k.started(pod.UID) {
		return ctrl.Result{}, nil
	}
	if mine, err := k.isCapture(ctx, &pod); err != nil || !mine {
		return ctrl.Result{}, err
	}
	podDir := filepath.Join(k.podsDir, pod.Namespace, pod.Name+"-"+string(pod.UID))
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return ctrl.Result{}, err
	}
	p := planner{reader: k.reader, executables: k.executables, podDir: podDir, containers: k.containers, node: k.node, grace: gracePeriod(&pod)}
	plan, err := p.plan(ctx, &pod)
	var nr *notReady
	if errors.As(err, &nr) {
		return ctrl.Result{RequeueAfter: waitRetry}, k.patchStatus(ctx, &pod, pendingStatus(&pod, nr))
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
	run := newRestartingRun(k, pod.DeepCopy(), plan)
	if err := k.patchStatus(ctx, &pod, run.status()); err != nil {
		k.stop(req.NamespacedName, "")
		return ctrl.Result{}, err
	}
	plan.keepFresh(runCtx)
	k.track(run.run, runCtx)
	return ctrl.Result{}, nil
}

// isCapture holds when pod is the driver's capture: the capture's labels
// for one name, controlled by a live ReplicaSet controlled by a live
// Deployment of that name with the same labels, controlled by the
// CaptureProgress of that name, and one container running the capture.
func (k *captureKubelet) isCapture(ctx context.Context, pod *corev1.Pod) (bool, error) {
	name := pod.Labels[keeper.CaptureLabel]
	if !hasLabels(pod, keeper.Labels(name)) || len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		return false, nil
	}
	c := pod.Spec.Containers[0]
	if c.Name != keeper.ContainerName || len(c.Args) == 0 || c.Args[0] != capture.Subcommand {
		return false, nil
	}
	var rs appsv1.ReplicaSet
	if ok, err := controlledBy(ctx, k.reader, pod, "ReplicaSet", appsv1.SchemeGroupVersion.String(), &rs); err != nil || !ok {
		return false, err
	}
	var d appsv1.Deployment
	if ok, err := controlledBy(ctx, k.reader, &rs, "Deployment", appsv1.SchemeGroupVersion.String(), &d); err != nil || !ok {
		return false, err
	}
	owner := metav1.GetControllerOf(&d)
	return d.Name == name && hasLabels(&d, keeper.Labels(name)) && owner != nil && owner.Name == name &&
		owner.Kind == driverv1alpha1.CaptureProgressKind && owner.APIVersion == driverv1alpha1.GroupVersion.String(), nil
}

// controlledBy reads o's controller into owner and reports whether it is
// the live object of that kind the reference names (same UID).
func controlledBy(ctx context.Context, reader client.Reader, o client.Object, kind, apiVersion string, owner client.Object) (bool, error) {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != kind || ref.APIVersion != apiVersion {
		return false, nil
	}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}, owner); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return owner.GetUID() == ref.UID, nil
}

func hasLabels(o metav1.Object, want map[string]string) bool {
	for k, v := range want {
		if o.GetLabels()[k] != v {
			return false
		}
	}
	return true
}

// confirmDeletion removes a deleted Pod whose containers have ended, as
// a kubelet does once it has stopped them (a graceful delete of a bound
// Pod waits for that).
func (k *captureKubelet) confirmDeletion(ctx context.Context, pod *corev1.Pod) error {
	return client.IgnoreNotFound(k.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}))
}

// gracePeriod is the Pod's terminationGracePeriodSeconds (30 when unset).
func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}
