package tenantjobs_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Every tenant Job's containers request and are limited to the ephemeral
// storage they use: the emptyDir they mount (its sizeLimit) and room for
// their logs. Without it no ResourceQuota counts a rehearsal's three times
// the snapshot of scratch space, and the scheduler places its Pod on a
// node whatever its free disk.
func TestEveryTenantJobRequestsTheEphemeralStorageItUses(t *testing.T) {
	const size = 1 << 30
	obj := stagingstep.Object{Endpoint: "https://s3.example", Bucket: "b", Key: "tenant/etcd/a.db", SecretName: "s3",
		Size: size, SHA256: "sha256:" + strings.Repeat("a", 64)}
	_, stagingJob := staging.Build(staging.Spec{Namespace: "tenant", RestoreJobName: "rj", RestoreJobUID: "uid-1", Image: "driver:v1",
		Restore: obj, Rollback: &obj, LiveRevision: 5000, Deadline: 10 * time.Minute})
	inspectionJob := inspection.Build(inspection.Spec{Namespace: "tenant", BackupName: "b1", BackupUID: "uid-2", Image: "driver:v1",
		Object: obj, Deadline: 10 * time.Minute})
	rehearsalJob := rehearsal.Build(rehearsal.Spec{JobName: rehearsal.NewName(), Namespace: "tenant", RestoreJobName: "rj",
		RestoreJobUID: "uid-3", Image: "driver:v1", Object: obj, LiveRevision: 1500, Deadline: 30 * time.Minute},
		metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: "rj", UID: "uid-3"})

	logs := int64(64 << 20)
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		// scratch is the emptyDir the Job's step needs, 0 for none.
		scratch int64
	}{
		// The staging Job writes to its claim, which the claim's own
		// request accounts for.
		{"staging", stagingJob, 0},
		{"inspection", inspectionJob, size + 64<<20},
		{"rehearsal", rehearsalJob, 3*size + 256<<20},
	} {
		pod := tc.job.Spec.Template.Spec
		var emptyDirs int
		for _, v := range pod.Volumes {
			if v.EmptyDir == nil {
				continue
			}
			emptyDirs++
			if v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Value() != tc.scratch {
				t.Errorf("%s: emptyDir %s size limit %v, want %d", tc.name, v.Name, v.EmptyDir.SizeLimit, tc.scratch)
			}
		}
		if (tc.scratch > 0) != (emptyDirs == 1) {
			t.Errorf("%s: %d emptyDirs", tc.name, emptyDirs)
		}
		for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
			want := resource.NewQuantity(tc.scratch+logs, resource.BinarySI)
			req, lim := c.Resources.Requests[corev1.ResourceEphemeralStorage], c.Resources.Limits[corev1.ResourceEphemeralStorage]
			if req.Cmp(*want) != 0 || lim.Cmp(*want) != 0 {
				t.Errorf("%s: container %s requests %s and is limited to %s of ephemeral storage, want %s both",
					tc.name, c.Name, req.String(), lim.String(), want)
			}
		}
	}
}

// EphemeralStorage counts the size limit of every emptyDir the container
// mounts, and only those (not one of another container, not a claim), on
// top of LogRoom; an emptyDir without a size limit is a bug in a Job's
// spec and panics rather than leave the disk unbounded.
func TestEphemeralStorageCountsTheEmptyDirsMounted(t *testing.T) {
	claim := corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
	volumes := []corev1.Volume{tenantjobs.Scratch("a", 1<<30), tenantjobs.Scratch("b", 100<<20), tenantjobs.Scratch("other", 5<<30), claim}
	mounts := func(names ...string) []corev1.VolumeMount {
		var out []corev1.VolumeMount
		for _, n := range names {
			out = append(out, corev1.VolumeMount{Name: n, MountPath: "/" + n})
		}
		return out
	}
	for _, tc := range []struct {
		mounts []string
		want   int64
	}{
		{nil, tenantjobs.LogRoom},
		{[]string{"claim"}, tenantjobs.LogRoom},
		{[]string{"a"}, 1<<30 + tenantjobs.LogRoom},
		{[]string{"a", "b", "claim"}, 1<<30 + 100<<20 + tenantjobs.LogRoom},
	} {
		got := tenantjobs.EphemeralStorage(mounts(tc.mounts...), volumes)
		if got.Value() != tc.want {
			t.Errorf("mounting %v: %s, want %d", tc.mounts, got.String(), tc.want)
		}
	}
	if v := tenantjobs.Scratch("a", 3<<30); v.EmptyDir.SizeLimit.Value() != 3<<30 {
		t.Errorf("Scratch: size limit %s", v.EmptyDir.SizeLimit)
	}
	defer func() {
		if recover() == nil {
			t.Error("an emptyDir without a size limit was counted")
		}
	}()
	unbounded := corev1.Volume{Name: "u", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	tenantjobs.EphemeralStorage(mounts("u"), []corev1.Volume{unbounded})
}
