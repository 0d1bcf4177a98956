package cachetrim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// hostileBackup is a Backup a tenant wrote: every driverMetadata key the
// driver knows carries a unique 4 KiB value, every known label a unique
// 63-byte one, and status.underlyingResources (Backup has no status
// subresource) a unique 4 KiB payload.
func hostileBackup(i int) *backupsv1alpha1.Backup {
	val := func(k string, n int) string {
		s := fmt.Sprintf("%s-%d-", k, i)
		return s + strings.Repeat("x", n-len(s))
	}
	meta := map[string]string{}
	for _, k := range []string{artifact.MetaBucket, artifact.MetaEndpoint, artifact.MetaKey, artifact.MetaRegion,
		artifact.MetaForcePathStyle, artifact.MetaCredentialsName, artifact.MetaDeletionPolicy, artifact.MetaEtcdVersion} {
		meta[k] = val(k, 4096)
	}
	labels := map[string]string{}
	for _, k := range []string{backupsv1alpha1.ApplicationNameLabel, backupsv1alpha1.OwningJobNamespaceLabel,
		backupsv1alpha1.PlanNameLabel, shard.Label} {
		labels[k] = val("l", 63)
	}
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-pin", Name: fmt.Sprintf("b%d", i), Labels: labels},
		Spec:       backupsv1alpha1.BackupSpec{DriverMetadata: meta},
		Status: backupsv1alpha1.BackupStatus{UnderlyingResources: &k8sruntime.RawExtension{
			Raw: []byte(`{"kind":"` + val("u", 4096) + `"}`)}},
	}
}

// A tenant's values cost what its Backups cost while they exist, and
// nothing once they are gone: 1,000 hostile Backups (8 unique 4 KiB
// driverMetadata values each, ~33 MiB) leave the heap where it was after
// the cache dropped them, and the shared table as long as it was.
func TestDeletedTenantValuesAreNotPinned(t *testing.T) {
	g := NewWithT(t)
	_, _ = Backup(backupOf("tenant-pin", "warm", nil)) // the driver's own constants
	entriesBefore := shared.Len()
	before := liveHeap()

	cached := make([]*backupsv1alpha1.Backup, 0, 1000)
	for i := range 1000 {
		out, err := Backup(hostileBackup(i))
		g.Expect(err).NotTo(HaveOccurred())
		cached = append(cached, out.(*backupsv1alpha1.Backup))
	}
	during := liveHeap()
	g.Expect(during-before).To(BeNumerically(">", 30<<20), "the hostile Backups themselves are ~37 MiB while cached")
	runtime.KeepAlive(cached)
	cached = nil // the informer drops the deleted Backups

	after := liveHeap()
	entriesAfter := shared.Len() // drops the dead entries now, as the next inserts would
	swept := liveHeap()
	t.Logf("live heap: before %d KiB, with 1,000 hostile Backups cached %d KiB, after they are deleted %d KiB, after the table's sweep %d KiB; shared table %d -> %d entries",
		before>>10, during>>10, after>>10, swept>>10, entriesBefore, entriesAfter)
	g.Expect(int64(after)-int64(before)).To(BeNumerically("<", 2<<20), "deleted Backups' values still pinned by the shared table")
	g.Expect(int64(swept)-int64(before)).To(BeNumerically("<", 256<<10), "the table's dead entries outlived its sweep")
	g.Expect(entriesAfter).To(BeNumerically("<=", entriesBefore), "the shared table kept the tenant's values")
}
