package kamajistandin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// Kamaji's values of status.kubernetesResources.version.status the
// stand-in reports.
const (
	StatusReady        = "Ready"
	StatusWriteLimited = "WriteLimited"
	StatusNotReady     = "NotReady"
)

// dataStoreField indexes TenantControlPlanes by spec.dataStore.
const dataStoreField = "spec.dataStore"

func (s *StandIn) setupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kamajiv1alpha1.TenantControlPlane{}, dataStoreField, func(o client.Object) []string {
		return []string{o.(*kamajiv1alpha1.TenantControlPlane).Spec.DataStore}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-kamaji").
		For(&kamajiv1alpha1.TenantControlPlane{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(controlPlaneOfPod)).
		Watches(&kamajiv1alpha1.DataStore{}, handler.EnqueueRequestsFromMapFunc(s.usersOf)).
		WatchesRawSource(source.Channel(s.exits, &handler.EnqueueRequestForObject{})).
		Complete(s)
}

func controlPlaneOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if name := l[kamajiv1alpha1.NameLabel]; name != "" && l[kamajiv1alpha1.ComponentLabel] == kamajiv1alpha1.ComponentDeployment {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	}
	return nil
}

// usersOf maps a DataStore to the control planes that name it, so that one
// rendered after its control plane is picked up.
func (s *StandIn) usersOf(ctx context.Context, o client.Object) []reconcile.Request {
	var tcps kamajiv1alpha1.TenantControlPlaneList
	if err := s.client.List(ctx, &tcps, client.MatchingFields{dataStoreField: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(tcps.Items))
	for _, t := range tcps.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return reqs
}

func tcpStub(key types.NamespacedName) *kamajiv1alpha1.TenantControlPlane {
	return &kamajiv1alpha1.TenantControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// Reconcile brings one control plane to what its TenantControlPlane asks:
// the process running (restarted when its Pod was deleted), the fence
// flags in force, a Ready Pod for the running process, the status told.
func (s *StandIn) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var tcp kamajiv1alpha1.TenantControlPlane
	if err := s.client.Get(ctx, req.NamespacedName, &tcp); apierrors.IsNotFound(err) {
		return ctrl.Result{}, s.forget(ctx, req.NamespacedName)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !tcp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, s.forget(ctx, req.NamespacedName)
	}

	var ds kamajiv1alpha1.DataStore
	if err := s.client.Get(ctx, client.ObjectKey{Name: tcp.Spec.DataStore}, &ds); err != nil {
		// The DataStore watch brings the control plane back here.
		log.Info("waiting for the DataStore", "dataStore", tcp.Spec.DataStore, "error", err.Error())
		return ctrl.Result{}, client.IgnoreNotFound(s.patchStatus(ctx, &tcp, "", StatusNotReady))
	}
	cluster, err := ClusterOf(&ds)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if err := s.addUser(ctx, &ds, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	}
	cp, err := s.ensurePlane(req.NamespacedName, cluster, ds.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The flags are in force before the status can say WriteLimited.
	s.fence.set(req.NamespacedName, tcp.Spec.WritePermissions)

	live, err := s.livePods(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	podGone := cp.pod != "" && !slices.ContainsFunc(live, func(p corev1.Pod) bool { return p.UID == cp.pod })
	if podGone || !cp.api.running() {
		if err := s.patchStatus(ctx, &tcp, ds.Name, StatusNotReady); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("starting the control plane's kube-apiserver", "podDeleted", podGone)
		cp.api.stop()
		if err := s.start(ctx, req.NamespacedName, cp); err != nil {
			return ctrl.Result{}, err
		}
		if cp.pod, err = s.createPod(ctx, &tcp); err != nil {
			return ctrl.Result{}, err
		}
	}
	state := StatusReady
	if tcp.Spec.WritePermissions.Limited() {
		state = StatusWriteLimited
	}
	return ctrl.Result{}, s.patchStatus(ctx, &tcp, ds.Name, state)
}

// forget stops a deleted control plane and takes it off its DataStore.
func (s *StandIn) forget(ctx context.Context, key types.NamespacedName) error {
	cp := s.removePlane(key)
	if cp == nil {
		return nil
	}
	var ds kamajiv1alpha1.DataStore
	if err := s.client.Get(ctx, client.ObjectKey{Name: cp.dataStore}, &ds); err != nil {
		return client.IgnoreNotFound(err)
	}
	user := key.Namespace + "/" + key.Name
	return s.patchUsedBy(ctx, &ds, slices.DeleteFunc(slices.Clone(ds.Status.UsedBy), func(u string) bool { return u == user }))
}

func (s *StandIn) addUser(ctx context.Context, ds *kamajiv1alpha1.DataStore, key types.NamespacedName) error {
	user := key.Namespace + "/" + key.Name
	if slices.Contains(ds.Status.UsedBy, user) {
		return nil
	}
	usedBy := append(slices.Clone(ds.Status.UsedBy), user)
	slices.Sort(usedBy)
	return s.patchUsedBy(ctx, ds, usedBy)
}

func (s *StandIn) patchUsedBy(ctx context.Context, ds *kamajiv1alpha1.DataStore, usedBy []string) error {
	// Kamaji's CRD requires ready with any status; the stand-in's etcd
	// DataStores are always reachable through their proxies.
	body, err := json.Marshal(map[string]any{"status": map[string]any{"ready": true, "usedBy": usedBy}})
	if err != nil {
		return err
	}
	return s.client.Status().Patch(ctx, ds, client.RawPatch(types.MergePatchType, body))
}

// patchStatus merge-patches only the two fields the stand-in owns.
func (s *StandIn) patchStatus(ctx context.Context, tcp *kamajiv1alpha1.TenantControlPlane, dataStore, state string) error {
	if tcp.Status.Storage.DataStoreName == dataStore && tcp.Status.KubernetesResources.Version.Status == state {
		return nil
	}
	storage := map[string]any{}
	if dataStore != "" {
		storage["dataStoreName"] = dataStore
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{
		"storage":             storage,
		"kubernetesResources": map[string]any{"version": map[string]any{"status": state}},
	}})
	if err != nil {
		return err
	}
	if err := s.client.Status().Patch(ctx, tcp, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("status of TenantControlPlane %s/%s: %w", tcp.Namespace, tcp.Name, err)
	}
	return nil
}

// livePods are the control plane's Pods not being deleted.
func (s *StandIn) livePods(ctx context.Context, key types.NamespacedName) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{
		kamajiv1alpha1.NameLabel: key.Name, kamajiv1alpha1.ComponentLabel: kamajiv1alpha1.ComponentDeployment,
	}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !p.DeletionTimestamp.IsZero() }), nil
}

// createPod records the running process as a Ready Pod owned by the
// control plane (the garbage collector removes it with the control plane).
// It has no node, so deleting it takes effect at once.
func (s *StandIn) createPod(ctx context.Context, tcp *kamajiv1alpha1.TenantControlPlane) (types.UID, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    tcp.Namespace,
			GenerateName: tcp.Name + "-",
			Labels:       map[string]string{kamajiv1alpha1.NameLabel: tcp.Name, kamajiv1alpha1.ComponentLabel: kamajiv1alpha1.ComponentDeployment},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kamajiv1alpha1.GroupVersion.String(), Kind: "TenantControlPlane", Name: tcp.Name, UID: tcp.UID,
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:sandbox"}}},
	}
	if err := s.client.Create(ctx, pod); err != nil {
		return "", fmt.Errorf("control plane Pod of %s/%s: %w", tcp.Namespace, tcp.Name, err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "kube-apiserver", Image: pod.Spec.Containers[0].Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if err := s.client.Status().Update(ctx, pod); err != nil {
		return pod.UID, fmt.Errorf("status of control plane Pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return pod.UID, nil
}

func ptr[T any](v T) *T { return &v }

// installFence registers the write-permissions webhook in the apiserver.
func (s *StandIn) installFence(ctx context.Context, key types.NamespacedName, cp *controlPlane) error {
	cs, err := kubernetes.NewForConfig(cp.api.admin)
	if err != nil {
		return err
	}
	if err := s.fence.install(ctx, cs, s.ca.PEM, key); err != nil {
		return fmt.Errorf("control plane %s: install the write-permissions webhook: %w", key, err)
	}
	return nil
}

// ClusterOf names the EtcdCluster behind an etcd DataStore from its first
// endpoint, the client Service <cluster>-client.<namespace>.svc:2379 the
// etcd chart renders.
func ClusterOf(ds *kamajiv1alpha1.DataStore) (types.NamespacedName, error) {
	if ds.Spec.Driver != kamajiv1alpha1.EtcdDriver || len(ds.Spec.Endpoints) == 0 {
		return types.NamespacedName{}, fmt.Errorf("DataStore %s: not an etcd DataStore with an endpoint", ds.Name)
	}
	host, _, _ := strings.Cut(ds.Spec.Endpoints[0], ":")
	parts := strings.Split(host, ".")
	cluster, ok := strings.CutSuffix(parts[0], "-client")
	if len(parts) < 2 || !ok || cluster == "" {
		return types.NamespacedName{}, fmt.Errorf("DataStore %s: endpoint %q is not <cluster>-client.<namespace>.svc:<port>", ds.Name, ds.Spec.Endpoints[0])
	}
	return types.NamespacedName{Namespace: parts[1], Name: cluster}, nil
}
