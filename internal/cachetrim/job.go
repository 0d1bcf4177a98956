package cachetrim

import (
	"encoding/json"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// maxJobOwners is how many of a trimmed Job's owner references of the
// driver's group are kept (the driver sets one).
const maxJobOwners = 2

// Job keeps a Job whole when it is no bigger than budget bytes (as JSON,
// without managed fields), which every Job the driver builds is
// (tenantjobs.CacheBudget); a bigger one is not the driver's, or no
// longer as the driver built it. The Job cache selects Jobs by the
// driver's part-of label, which a tenant can put on Jobs of its own,
// padded up to the API server's 1.5 MiB: of those the cache keeps only
// what the watches read (name, the labels named by keys, up to two owner
// references of the driver's group) and the Job's spec and status
// without its Pod template's spec, marked trimmed. A trimmed Job runs no
// container, so it is never the driver's (tenantjobs.Mine), and costs
// the cache a little, not its size.
func Job(budget int, keys ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		j, ok := in.(*batchv1.Job)
		if !ok {
			return Plain(in)
		}
		stripManagedFields(j)
		if raw, err := json.Marshal(j); err == nil && len(raw) <= budget {
			return j, nil
		}
		markTrimmed(j)
		j.Labels = only(j.Labels, keys)
		j.Finalizers = nil
		j.OwnerReferences = ownersOf(j.OwnerReferences, backupsv1alpha1.GroupVersion.Group)
		j.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: only(j.Spec.Template.Labels, keys)}}
		j.Spec.Selector, j.Spec.PodFailurePolicy, j.Spec.SuccessPolicy = nil, nil, nil
		return j, nil
	}
}

// ownersOf is what a trimmed copy keeps of refs: up to maxJobOwners of
// group's (the driver sets one).
func ownersOf(refs []metav1.OwnerReference, group string) []metav1.OwnerReference {
	var owners []metav1.OwnerReference
	for _, ref := range refs {
		if len(owners) < maxJobOwners && strings.HasPrefix(ref.APIVersion, group+"/") {
			owners = append(owners, ref)
		}
	}
	return owners
}

// only is m's entries whose keys are among keys (no entry a tenant
// invented), each value at most a label value's length.
func only(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if len(v) > 63 {
			v = v[:63]
		}
		out[k] = v
	}
	return out
}
