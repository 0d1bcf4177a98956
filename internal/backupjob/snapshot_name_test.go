package backupjob

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

func jobNamed(name, uid string) *backupsv1alpha1.BackupJob {
	return &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
}

func TestSnapshotNameFitsTheOperatorsJobName(t *testing.T) {
	for _, name := range []string{
		"a", "nightly", strings.Repeat("x", 63), strings.Repeat("y", 253),
		"plan.with.dots-29334455", strings.Repeat("-", 10) + "z", strings.Repeat("a", 42) + "-" + strings.Repeat("b", 20),
	} {
		got := SnapshotName(jobNamed(name, "uid-1"))
		job := got + "-snapshot"
		if len(job) > 63 {
			t.Errorf("%q: operator Job name %q is %d characters", name, job, len(job))
		}
		if errs := validation.IsDNS1123Label(job); len(errs) > 0 {
			t.Errorf("%q: operator Job name %q is not a DNS label: %v", name, job, errs)
		}
		if got != SnapshotName(jobNamed(name, "uid-1")) {
			t.Errorf("%q: name is not deterministic", name)
		}
	}
}

func TestSnapshotNameChangesWithTheJobUID(t *testing.T) {
	a, b := SnapshotName(jobNamed("daily", "uid-1")), SnapshotName(jobNamed("daily", "uid-2"))
	if a == b {
		t.Fatalf("a re-created job (new UID) reuses snapshot name %q", a)
	}
	if !strings.HasPrefix(a, "daily-") {
		t.Fatalf("snapshot name %q does not start with the job name", a)
	}
}
