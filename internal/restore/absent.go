package restore

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// A restore into an absent EtcdCluster (deleted by hand after a failed
// restore, say) has no live object to take the cluster's shape (version,
// size, TLS, the chart's metadata) from. A capture an earlier restore of
// the same namespace left in the driver's namespace has it: the newest one
// is the model, copied into this restore's own capture (key captured-from
// names it), and the restore goes on as from a purged cluster. Only the
// driver writes captures (its namespace; tenants cannot), so one labelled
// for the namespace and holding that namespace's EtcdCluster is the
// driver's. There is no live data to take a safety snapshot of, so the job
// must say spec.options.safetySnapshot: false; without a capture the
// restore is refused as before.

// captureKeyFrom names, in a capture made for an absent cluster, the
// capture its definition was copied from.
const captureKeyFrom = "captured-from"

// priorCapture is the newest capture of the namespace's cluster an earlier
// restore left behind.
type priorCapture struct {
	name    string
	job     string
	cluster *unstructured.Unstructured
	// model is cluster as the typed mirror, for the pre-flight checks.
	model *etcdv1alpha2.EtcdCluster
}

// observePriorCapture finds the newest usable capture of the namespace's
// cluster in the driver's namespace. Ones that do not parse as that
// namespace's EtcdCluster are skipped.
func (r *Reconciler) observePriorCapture(ctx context.Context, o *observation) error {
	var list corev1.ConfigMapList
	if err := r.Reader.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels{
		claim.ComponentLabel: captureComponent, backupsv1alpha1.CaptureForLabel: o.job.Namespace,
	}); err != nil {
		return fmt.Errorf("list captures of EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		if a, b := items[i].CreationTimestamp, items[j].CreationTimestamp; !a.Equal(&b) {
			return b.Before(&a)
		}
		return items[i].Name > items[j].Name
	})
	for i := range items {
		if p := parsePriorCapture(&items[i], o.job.Namespace); p != nil && items[i].Name != captureName(o.job) {
			o.prior = p
			return nil
		}
	}
	return nil
}

// parsePriorCapture reads cm as a capture of EtcdCluster etcd in ns, or nil.
func parsePriorCapture(cm *corev1.ConfigMap, ns string) *priorCapture {
	if cm.Labels[backupsv1alpha1.RestoreJobUIDLabel] == "" || cm.Labels[backupsv1alpha1.CaptureForLabel] != ns {
		return nil
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data[captureKeyCluster]), &obj); err != nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	if gvk.Group != etcdv1alpha2.GroupVersion.Group || gvk.Kind != "EtcdCluster" || u.GetNamespace() != ns || u.GetName() != clusterName {
		return nil
	}
	model := &etcdv1alpha2.EtcdCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, model); err != nil {
		return nil
	}
	return &priorCapture{name: cm.Name, job: cm.Labels[backupsv1alpha1.RestoreJobNameLabel], cluster: u, model: model}
}

// absentRefusal says why a restore into the absent cluster cannot start, or
// "" when the prior capture makes it possible.
func absentRefusal(o *observation) (backupsv1alpha1.RestoreReason, string) {
	name := o.job.Namespace + "/" + clusterName
	switch {
	case o.prior == nil:
		return backupsv1alpha1.ReasonSourceClusterNotFound, fmt.Sprintf(
			"EtcdCluster %s does not exist and no restore left a capture of it in the driver's namespace, so there is no shape (version, size, TLS) to re-create it with; deploy the Etcd application %s first",
			name, o.app)
	case o.pvcs > 0:
		return backupsv1alpha1.ReasonSourceClusterNotFound, fmt.Sprintf(
			"EtcdCluster %s does not exist but %d of its member PVCs (labelled %s=%s) remain and may hold its data; the restore does not delete them: delete them, or re-create the cluster, first",
			name, o.pvcs, instanceLabel, clusterName)
	case wantSafety(o):
		return backupsv1alpha1.ReasonClusterNotAvailable, fmt.Sprintf(
			"EtcdCluster %s does not exist, so no safety snapshot of it can be taken; it can be re-created from capture ConfigMap %s/%s (left by RestoreJob %s): set spec.options.safetySnapshot: false to restore into it",
			name, o.driverNS, o.prior.name, o.prior.job)
	}
	return "", ""
}

// decideAbsent is the step before the capture when the cluster does not
// exist: capture from the prior capture, or refuse.
func decideAbsent(o *observation) decision {
	if reason, msg := absentRefusal(o); reason != "" {
		return failure(o, reason, msg)
	}
	if len(o.inflight) > 0 {
		return waitSnapshots(o)
	}
	return decision{state: stateCapture, reason: backupsv1alpha1.ReasonSpecCaptured, message: fmt.Sprintf(
		"EtcdCluster %s does not exist: capturing its definition from ConfigMap %s/%s (left by RestoreJob %s) into ConfigMap %s/%s",
		clusterName, o.driverNS, o.prior.name, o.prior.job, o.driverNS, captureName(o.job))}
}

// absentModel is what a capture of the absent cluster copies: the prior
// capture's cluster, once the API server confirms the cluster is still
// absent.
func (r *Reconciler) absentModel(ctx context.Context, o *observation) (*unstructured.Unstructured, error) {
	if o.prior == nil {
		return nil, fmt.Errorf("EtcdCluster %s/%s does not exist and there is no capture to re-create it from", o.job.Namespace, clusterName)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: clusterName}, live)
	switch {
	case err == nil:
		return nil, fmt.Errorf("EtcdCluster %s/%s appeared before it was captured; looking again", o.job.Namespace, clusterName)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read EtcdCluster %s/%s to capture it: %w", o.job.Namespace, clusterName, err)
	}
	return o.prior.cluster, nil
}

// clusterModel is the cluster a restore re-creates the shape of: the live
// one, or the capture's.
func clusterModel(o *observation) *etcdv1alpha2.EtcdCluster {
	if o.cluster != nil {
		return o.cluster
	}
	if o.prior != nil {
		return o.prior.model
	}
	if o.capture != nil {
		model := &etcdv1alpha2.EtcdCluster{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(o.capture.cluster.Object, model) == nil {
			return model
		}
	}
	return nil
}
