package tenantjobs

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tenant can create Jobs and Pods in its namespace with any labels,
// names and owner references; what a tenant Job reports decides what the
// driver records. A Job or a Pod is read only when it is exactly what the
// driver built.

// Mine reports whether job is the Job the driver built as want: it
// carries want's labels, every owner reference want has (API version,
// kind, UID, and whether it is the controller), and runs exactly want's
// Pod template (sameContainers with the environment and mounts, and the
// same volumes). A Job a tenant made under the driver's labels or name
// fails one of these and is never read.
func Mine(job, want *batchv1.Job) bool {
	for k, v := range want.Labels {
		if job.Labels[k] != v {
			return false
		}
	}
	for _, w := range want.OwnerReferences {
		if !hasOwner(job, w) {
			return false
		}
	}
	got, exp := job.Spec.Template.Spec, want.Spec.Template.Spec
	return sameContainers(got.InitContainers, exp.InitContainers, true) && sameContainers(got.Containers, exp.Containers, true) &&
		equality.Semantic.DeepEqual(got.Volumes, exp.Volumes)
}

// MyPod reports whether p is a Pod of job: job is its controller (by UID),
// and it runs job's containers as built (sameContainers). A Pod a tenant
// made with the Job as its owner runs something else, or is not
// controlled by it.
func MyPod(p *corev1.Pod, job *batchv1.Job) bool {
	owner := metav1.GetControllerOf(p)
	want := job.Spec.Template.Spec
	return owner != nil && owner.UID == job.UID &&
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
