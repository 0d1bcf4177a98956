package tenantjobs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A tenant Job writes to the node's disk: its logs, and the emptyDir a
// step works in (the inspection's download, the rehearsal's staged file,
// restored data directory and WAL: three times the snapshot). What it
// may write is its ephemeral-storage request and limit, so that a
// ResourceQuota on requests.ephemeral-storage counts it, the scheduler
// places the Pod on a node with that much free, and the kubelet evicts a
// Pod that writes more. One rule for all three Jobs, from the emptyDirs
// their specs size, so the two never disagree.

// LogRoom is the ephemeral storage a container is given beyond the
// emptyDirs it mounts: its logs, which the kubelet rotates at 10 MiB and
// keeps five of (--container-log-max-size, --container-log-max-files),
// and its termination message. Its root filesystem is read-only.
const LogRoom = 64 << 20

// Scratch is an emptyDir volume of size bytes: the only kind of emptyDir
// a tenant Job mounts (EphemeralStorage refuses one without a size).
func Scratch(name string, size int64) corev1.Volume {
	q := resource.NewQuantity(size, resource.BinarySI)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q}}}
}

// EphemeralStorage is what a container with mounts, in a Pod of volumes,
// may use of the node's ephemeral storage: LogRoom and the size limit of
// every emptyDir it mounts. An emptyDir without a size limit is a bug in
// the Job's spec (every tenant Job's scratch space is bounded: Scratch),
// and panics.
func EphemeralStorage(mounts []corev1.VolumeMount, volumes []corev1.Volume) resource.Quantity {
	total := resource.NewQuantity(LogRoom, resource.BinarySI)
	for _, m := range mounts {
		for _, v := range volumes {
			if v.Name != m.Name || v.EmptyDir == nil {
				continue
			}
			if v.EmptyDir.SizeLimit == nil {
				panic(fmt.Sprintf("tenantjobs: emptyDir %q has no size limit", v.Name))
			}
			total.Add(*v.EmptyDir.SizeLimit)
		}
	}
	return *total
}
