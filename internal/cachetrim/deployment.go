package cachetrim

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Deployment is Job's rule for the capture Deployments (the driver's one
// Deployment kind, owned by a CaptureProgress of the driver's group): the
// cache selects them by the part-of label a tenant can put on Deployments
// of its own, so one bigger than budget bytes is kept as its name, the
// labels named by keys, up to two owner references of the driver's group
// and its status, marked trimmed. A trimmed Deployment runs no container,
// so it is never the driver's (tenantjobs.MineDeployment).
func Deployment(budget int, keys ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		d, ok := in.(*appsv1.Deployment)
		if !ok {
			return Plain(in)
		}
		stripManagedFields(d)
		if raw, err := json.Marshal(d); err == nil && len(raw) <= budget {
			return d, nil
		}
		markTrimmed(d)
		d.Labels = only(d.Labels, keys)
		d.Finalizers = nil
		d.OwnerReferences = ownersOf(d.OwnerReferences, driverv1alpha1.GroupVersion.Group)
		d.Spec = appsv1.DeploymentSpec{Replicas: d.Spec.Replicas,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: only(d.Spec.Template.Labels, keys)}}}
		return d, nil
	}
}
