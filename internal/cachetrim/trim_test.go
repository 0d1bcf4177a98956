package cachetrim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

func snapshot(phase etcdv1alpha2.SnapshotPhase, ownerKind string, labels map[string]string) *etcdv1alpha2.EtcdSnapshot {
	yes := true
	return &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: labels, Annotations: map[string]string{"params": "{}"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m"}},
			OwnerReferences: []metav1.OwnerReference{{Kind: ownerKind, Name: "o", UID: "u", Controller: &yes}}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{Bucket: "b"}}},
		Status: etcdv1alpha2.EtcdSnapshotStatus{Phase: phase,
			Artifact: &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/k"}},
	}
}

// Only history is trimmed: what a running job or restore reads from the
// cache stays whole.
func TestSnapshotTrimsOnlyHistory(t *testing.T) {
	for name, tc := range map[string]struct {
		in      *etcdv1alpha2.EtcdSnapshot
		trimmed bool
	}{
		"complete, handed to its Backup": {snapshot(etcdv1alpha2.SnapshotPhaseComplete, "Backup", nil), true},
		"complete, still its job's":      {snapshot(etcdv1alpha2.SnapshotPhaseComplete, "BackupJob", nil), false},
		"running":                        {snapshot(etcdv1alpha2.SnapshotPhaseStarted, "Backup", nil), false},
		"a restore's safety snapshot": {snapshot(etcdv1alpha2.SnapshotPhaseComplete, "Backup",
			map[string]string{backupsv1alpha1.RestoreJobUIDLabel: "r"}), false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := Snapshot(tc.in)
			g.Expect(err).NotTo(HaveOccurred())
			s := out.(*etcdv1alpha2.EtcdSnapshot)
			g.Expect(s.ManagedFields).To(BeNil())
			g.Expect(Trimmed(s)).To(Equal(tc.trimmed))
			g.Expect(s.Status.Artifact == nil).To(Equal(tc.trimmed))
			g.Expect(s.Spec.Destination.S3 == nil).To(Equal(tc.trimmed))
			g.Expect(s.OwnerReferences).To(HaveLen(1))
			g.Expect(s.Status.Phase).To(Equal(tc.in.Status.Phase))
		})
	}
}

func TestBackupJobTrimsOnlyFinishedJobs(t *testing.T) {
	g := NewWithT(t)
	job := func(phase backupsv1alpha1.BackupJobPhase) *backupsv1alpha1.BackupJob {
		return &backupsv1alpha1.BackupJob{Status: backupsv1alpha1.BackupJobStatus{Phase: phase, Message: "m",
			Conditions: []metav1.Condition{{Type: "Ready"}}, BackupRef: &backupsv1alpha1.LocalObjectReference{Name: "b"}}}
	}
	out, _ := BackupJob(job(backupsv1alpha1.BackupJobPhaseRunning))
	g.Expect(Trimmed(out.(*backupsv1alpha1.BackupJob))).To(BeFalse())
	g.Expect(out.(*backupsv1alpha1.BackupJob).Status.Conditions).To(HaveLen(1))
	out, _ = BackupJob(job(backupsv1alpha1.BackupJobPhaseSucceeded))
	j := out.(*backupsv1alpha1.BackupJob)
	g.Expect(Trimmed(j)).To(BeTrue())
	g.Expect(j.Status.Conditions).To(BeEmpty())
	g.Expect(j.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded))
	g.Expect(j.Status.BackupRef).NotTo(BeNil())
}

func TestHelmReleaseKeepsSuspendAndReadiness(t *testing.T) {
	g := NewWithT(t)
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Generation: 3},
		Spec:       helmv2.HelmReleaseSpec{Suspend: true, ReleaseName: "etcd"},
		Status: helmv2.HelmReleaseStatus{ObservedGeneration: 3, LastAttemptedRevision: "1.2.3",
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}},
	}
	out, _ := HelmRelease(hr)
	got := out.(*helmv2.HelmRelease)
	g.Expect(Trimmed(got)).To(BeTrue())
	g.Expect(got.Spec.Suspend).To(BeTrue())
	g.Expect(got.Spec.ReleaseName).To(BeEmpty())
	g.Expect(got.Status.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(got.Status.Conditions).To(HaveLen(1))
	g.Expect(got.Status.LastAttemptedRevision).To(BeEmpty())
	g.Expect(got.Annotations).NotTo(HaveKey(backupsv1alpha1.RestoreSucceededAnnotation))

	// A restore's success seal is the one annotation kept: a restore
	// decides on it after it resumed the HelmRelease.
	sealed := hr.DeepCopy()
	sealed.Annotations = map[string]string{backupsv1alpha1.RestoreSucceededAnnotation: "job-uid", "other": "x"}
	out, _ = HelmRelease(sealed)
	got = out.(*helmv2.HelmRelease)
	g.Expect(Trimmed(got)).To(BeTrue())
	g.Expect(got.Annotations).To(HaveKeyWithValue(backupsv1alpha1.RestoreSucceededAnnotation, "job-uid"))
	g.Expect(got.Annotations).NotTo(HaveKey("other"))
	g.Expect(trimmedAnnotations).To(HaveLen(1), "the shared marker map is never written")
}

func backupOf(ns, name string, extra map[string]string) *backupsv1alpha1.Backup {
	group := "strategy.backups.cozystack.io"
	labels := map[string]string{backupsv1alpha1.ApplicationNameLabel: "etcd", backupsv1alpha1.OwningJobUIDLabel: name + "-uid"}
	for k, v := range extra {
		labels[k] = v
	}
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: strings.Clone(ns), Name: name, Labels: labels,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: "default"},
			DriverMetadata: map[string]string{
				strings.Clone(artifact.MetaBucket): strings.Clone("bucket"), artifact.MetaProvenance: name + "-signature"},
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady,
			UnderlyingResources: &k8sruntime.RawExtension{Raw: []byte(`{"kind":"EtcdBackupSnapshot"}`)},
			Conditions: []metav1.Condition{{Type: backupsv1alpha1.BackupConditionVerified, Status: metav1.ConditionTrue,
				Reason: backupsv1alpha1.BackupReasonProvenanceVerified, Message: strings.Clone(artifact.VerifiedMessage)}}},
	}
}

func at(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// A cached Backup is the Backup (every field equal), with what repeats
// held once: the same namespace and known keys and values point to the
// same bytes; its own values (UIDs, signatures) and keys a tenant invents
// are left alone, so a tenant cannot grow the shared table.
func TestBackupSharesWhatRepeats(t *testing.T) {
	g := NewWithT(t)
	tenantKeys := map[string]string{}
	for i := range 50 {
		tenantKeys[fmt.Sprintf("tenant.example/k%d", i)] = fmt.Sprintf("v%d", i)
	}
	var tenantFinalizers []string
	for i := range 50 {
		tenantFinalizers = append(tenantFinalizers, fmt.Sprintf("tenant.example/f%d", i))
	}
	want := backupOf("tenant-share", "a", tenantKeys)
	want.ManagedFields, want.Finalizers = nil, tenantFinalizers
	before := shared.Len()
	in := backupOf("tenant-share", "a", tenantKeys)
	in.Finalizers = append([]string(nil), tenantFinalizers...)
	outA, err := Backup(in)
	g.Expect(err).NotTo(HaveOccurred())
	outB, _ := Backup(backupOf("tenant-share", "b", nil))
	a, b := outA.(*backupsv1alpha1.Backup), outB.(*backupsv1alpha1.Backup)
	g.Expect(a).To(Equal(want))
	g.Expect(at(a.Namespace)).To(Equal(at(b.Namespace)))
	g.Expect(at(a.Spec.DriverMetadata[artifact.MetaBucket])).To(Equal(at(b.Spec.DriverMetadata[artifact.MetaBucket])))
	g.Expect(at(a.Status.Conditions[0].Message)).To(Equal(at(artifact.VerifiedMessage)))
	g.Expect(&a.Status.UnderlyingResources.Raw[0]).To(BeIdenticalTo(&b.Status.UnderlyingResources.Raw[0]))
	for k, v := range a.Labels {
		if k == backupsv1alpha1.ApplicationNameLabel {
			g.Expect(at(v)).To(Equal(at(b.Labels[k])))
		}
	}
	after := shared.Len()
	g.Expect(after-before).To(BeNumerically("<=", 4), "tenant-invented labels or finalizers entered the shared table")
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

// Cozystack's Backup CRD bounds none of a Backup's fields, so a tenant can
// write Backups far larger than any the driver writes (test/apivalidation
// proved the bound of the driver's own CRD, which is gone): the cache
// keeps of them neither driverMetadata nor status.underlyingResources,
// marked trimmed; a Backup of the driver's size is kept whole.
func TestOversizedBackupsAreNotKept(t *testing.T) {
	g := NewWithT(t)
	many := backupOf("tenant-big", "many", nil)
	for i := range 65 {
		many.Spec.DriverMetadata[fmt.Sprintf("k%d", i)] = "v"
	}
	huge := backupOf("tenant-big", "huge", nil)
	huge.Spec.DriverMetadata[artifact.MetaKey] = strings.Repeat("k", 100<<10)
	longKey := backupOf("tenant-big", "long-key", nil)
	longKey.Spec.DriverMetadata[strings.Repeat("k", 254)] = "v"
	longName := backupOf("tenant-big", "long-name", nil)
	longName.Spec.ApplicationRef.Name = strings.Repeat("a", 254)
	payload := backupOf("tenant-big", "payload", nil)
	payload.Status.UnderlyingResources.Raw = []byte(`{"kind":"EtcdBackupSnapshot","x":"` + strings.Repeat("x", 64<<10) + `"}`)
	for _, b := range []*backupsv1alpha1.Backup{many, huge, longKey, longName, payload} {
		out, err := Backup(b)
		g.Expect(err).NotTo(HaveOccurred())
		got := out.(*backupsv1alpha1.Backup)
		g.Expect(got.Spec.DriverMetadata).To(BeNil(), b.Name)
		g.Expect(got.Status.UnderlyingResources).To(BeNil(), b.Name)
		g.Expect(len(got.Spec.ApplicationRef.Name)).To(BeNumerically("<=", 253), b.Name)
		g.Expect(Trimmed(got)).To(BeTrue(), b.Name)
	}
	normal := backupOf("tenant-big", "normal", nil)
	normal.Spec.DriverMetadata[artifact.MetaKey] = strings.Repeat("k", 4096)
	out, _ := Backup(normal)
	g.Expect(Trimmed(out.(*backupsv1alpha1.Backup))).To(BeFalse())
	g.Expect(out.(*backupsv1alpha1.Backup).Spec.DriverMetadata).To(HaveLen(3))
}
