package testenv

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// controlPlanes plays Kamaji for the TenantControlPlanes of the namespace:
// it reports WriteLimited while writePermissions block anything (Ready
// otherwise), and keeps one Ready kube-apiserver Pod per control plane,
// making a new one when the last is deleted, as its Deployment would.
func (op *Operator) controlPlanes(ctx context.Context) {
	var tcps kamajiv1alpha1.TenantControlPlaneList
	if op.c.List(ctx, &tcps, client.InNamespace(op.ns)) != nil {
		return
	}
	for i := range tcps.Items {
		t := &tcps.Items[i]
		want := "Ready"
		if w := t.Spec.WritePermissions; w.BlockCreate || w.BlockUpdate || w.BlockDelete {
			want = "WriteLimited"
		}
		if t.Status.KubernetesResources.Version.Status != want {
			t.Status.KubernetesResources.Version.Status = want
			_ = op.c.Status().Update(ctx, t)
		}
		op.controlPlanePod(ctx, t)
	}
}

func (op *Operator) controlPlanePod(ctx context.Context, t *kamajiv1alpha1.TenantControlPlane) {
	labels := map[string]string{kamajiv1alpha1.NameLabel: t.Name, kamajiv1alpha1.ComponentLabel: kamajiv1alpha1.ComponentDeployment}
	var pods corev1.PodList
	if op.c.List(ctx, &pods, client.InNamespace(t.Namespace), client.MatchingLabels(labels)) != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			_ = op.c.Status().Update(ctx, p)
		}
		return
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, GenerateName: t.Name + "-", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.34.0"}}},
	}
	_ = op.c.Create(ctx, p)
}
