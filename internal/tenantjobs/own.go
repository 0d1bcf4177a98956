package tenantjobs

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The tenant can create Jobs, Deployments and Pods in its namespace with
// any labels, names and owner references; what a tenant Job reports
// decides what the driver records. A Job, a Deployment or a Pod is read
// only when it is exactly what the driver built.

// Mine reports whether job is the Job the driver built as want
// (built).
func Mine(job, want *batchv1.Job) bool {
	return built(job, want, &job.Spec.Template.Spec, &want.Spec.Template.Spec)
}

// MineDeployment reports whether d is the Deployment the driver built as
// want (built): the capture's, by the same rule as a Job's.
func MineDeployment(d, want *appsv1.Deployment) bool {
	return built(d, want, &d.Spec.Template.Spec, &want.Spec.Template.Spec)
}

// built is the one rule of what the driver built: got carries want's
// labels, every owner reference want has (API version, kind, UID, and
// whether it is the controller), and runs exactly want's Pod template
// (sameContainers with the environment and mounts, the same volumes and
// the same service account). An object a tenant made under the driver's
// labels or name, or edited since, fails one of these and is never read.
func built(got, want metav1.Object, gotPod, wantPod *corev1.PodSpec) bool {
	for k, v := range want.GetLabels() {
		if got.GetLabels()[k] != v {
			return false
		}
	}
	for _, w := range want.GetOwnerReferences() {
		if !hasOwner(got, w) {
			return false
		}
	}
	return sameContainers(gotPod.InitContainers, wantPod.InitContainers, true) && sameContainers(gotPod.Containers, wantPod.Containers, true) &&
		equality.Semantic.DeepEqual(gotPod.Volumes, wantPod.Volumes) && gotPod.ServiceAccountName == wantPod.ServiceAccountName &&
		isTrue(gotPod.AutomountServiceAccountToken) == isTrue(wantPod.AutomountServiceAccountToken)
}

// MyPod reports whether p is a Pod of job (controlledPod).
func MyPod(p *corev1.Pod, job *batchv1.Job) bool {
	return controlledPod(p, job.UID, &job.Spec.Template.Spec)
}

// controlledPod reports whether p is a Pod the object of UID owner
// controls (a Job, or a Deployment's ReplicaSet) and runs want's
// containers as built (sameContainers). A Pod a tenant made with that
// owner runs something else, or is not controlled by it.
func controlledPod(p *corev1.Pod, owner types.UID, want *corev1.PodSpec) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.UID == owner &&
		sameContainers(p.Spec.InitContainers, want.InitContainers, false) && sameContainers(p.Spec.Containers, want.Containers, false)
}

func hasOwner(o metav1.Object, w metav1.OwnerReference) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == w.UID && ref.Kind == w.Kind && ref.APIVersion == w.APIVersion && isTrue(ref.Controller) == isTrue(w.Controller) {
			return true
		}
	}
	return false
}

func isTrue(b *bool) bool { return b != nil && *b }

// sameContainers: got runs want's containers, in order, each with the
// same name, image, command, arguments and termination message path;
// with full, the same environment and mounts too (a Pod's may be
// defaulted, its Job's template's as built may not).
func sameContainers(got, want []corev1.Container, full bool) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Image != w.Image || !equality.Semantic.DeepEqual(g.Command, w.Command) ||
			!equality.Semantic.DeepEqual(g.Args, w.Args) || g.TerminationMessagePath != w.TerminationMessagePath {
			return false
		}
		if full && (!equality.Semantic.DeepEqual(g.Env, w.Env) || !equality.Semantic.DeepEqual(g.VolumeMounts, w.VolumeMounts)) {
			return false
		}
	}
	return true
}
