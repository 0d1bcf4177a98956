package tenantjobs_test

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// The Job cache keeps whole every Job the driver builds, with the longest
// S3 names and an extra CA bundle, so it still knows them for its own
// (Mine); only a Job bigger than any of them is trimmed, and a trimmed
// copy of the driver's own Job is not taken for it.
func TestTheJobCacheKeepsTheDriversJobsWhole(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	for _, ca := range []string{"", long(8 << 10)} {
		obj := stagingstep.Object{Endpoint: "https://" + long(240) + ".example", Bucket: long(63), Key: long(1024), Region: long(64),
			SecretName: long(253), Size: 1 << 40, SHA256: "sha256:" + strings.Repeat("a", 64)}
		_, stagingJob := staging.Build(staging.Spec{Namespace: long(63), RestoreJobName: long(253), RestoreJobUID: "uid-1", Image: long(255),
			Restore: obj, Rollback: &obj, LiveRevision: 1 << 62, Deadline: 10 * time.Minute, CAPEM: ca})
		inspectionJob := inspection.Build(inspection.Spec{Namespace: long(63), BackupName: long(253), BackupUID: "uid-2", Image: long(255),
			Object: obj, Deadline: 10 * time.Minute, CAPEM: ca})
		rehearsalJob := rehearsal.Build(rehearsal.Spec{JobName: rehearsal.NewName(), Namespace: long(63), RestoreJobName: long(253),
			RestoreJobUID: "uid-3", Image: long(255), Object: obj, LiveRevision: 1 << 62, Deadline: 30 * time.Minute, CAPEM: ca},
			metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: long(253), UID: "uid-3"})
		trim := cachetrim.Job(tenantjobs.CacheBudget(len(ca)), tenantjobs.LabelKeys()...)
		for name, built := range map[string]*batchv1.Job{"staging": stagingJob, "inspection": inspectionJob, "rehearsal": rehearsalJob} {
			out, err := trim(built.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			cached := out.(*batchv1.Job)
			if cachetrim.Trimmed(cached) || !tenantjobs.Mine(cached, built) {
				t.Errorf("%s (CA of %d bytes): the cache trimmed the driver's own Job", name, len(ca))
			}
			padded := built.DeepCopy()
			padded.Spec.Template.Spec.Containers[0].Env[0].Value += long(tenantjobs.CacheBudget(len(ca)))
			out, err = cachetrim.Job(tenantjobs.CacheBudget(len(ca)), tenantjobs.LabelKeys()...)(padded)
			if err != nil {
				t.Fatal(err)
			}
			if cached := out.(*batchv1.Job); !cachetrim.Trimmed(cached) || tenantjobs.Mine(cached, built) {
				t.Errorf("%s (CA of %d bytes): a Job bigger than the budget was kept whole, or taken for the driver's once trimmed", name, len(ca))
			}
		}
	}
}
