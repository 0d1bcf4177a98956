package tenantjobs

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeploymentPods are the Pods of d, the driver's own Deployment (checked
// with MineDeployment), that run what d runs now: each is controlled by a
// ReplicaSet that d controls and whose template is d's (the same
// containers, volumes and service account), and runs those containers
// (controlledPod). ReplicaSets and Pods are listed live, by d's selector,
// in d's namespace: the driver caches neither. A ReplicaSet or Pod a
// tenant made under d's labels, or one of an older template of d, is
// left out.
func DeploymentPods(ctx context.Context, c client.Reader, d *appsv1.Deployment) ([]corev1.Pod, error) {
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		return nil, nil
	}
	sel := client.MatchingLabels(d.Spec.Selector.MatchLabels)
	var sets appsv1.ReplicaSetList
	if err := c.List(ctx, &sets, client.InNamespace(d.Namespace), sel); err != nil {
		return nil, fmt.Errorf("list the ReplicaSets of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	want := &d.Spec.Template.Spec
	var current []*appsv1.ReplicaSet
	for i := range sets.Items {
		rs := &sets.Items[i]
		ref := rs.OwnerReferences
		controlled := false
		for _, r := range ref {
			controlled = controlled || (isTrue(r.Controller) && r.UID == d.UID && r.Kind == "Deployment")
		}
		got := &rs.Spec.Template.Spec
		if controlled && sameContainers(got.InitContainers, want.InitContainers, true) && sameContainers(got.Containers, want.Containers, true) &&
			equality.Semantic.DeepEqual(got.Volumes, want.Volumes) && got.ServiceAccountName == want.ServiceAccountName {
			current = append(current, rs)
		}
	}
	if len(current) == 0 {
		return nil, nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(d.Namespace), sel); err != nil {
		return nil, fmt.Errorf("list the Pods of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		for _, rs := range current {
			if controlledPod(&p, rs.UID, want) {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}
