package manager

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/informerguard"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The running manager keeps one informer per kind while its controllers
// work: no kind is read in a second form (which would cache every object of
// it twice), and a read that would do so is refused. History is cached
// trimmed, and the API server's object stays whole.
func TestOneInformerPerKindAndTrimmedHistory(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()

	o := DefaultOptions()
	o.ProbeAddr, o.MetricsAddr = "0", "0"
	// Other tests of the package build managers in this process too.
	o.SkipControllerNameValidation = true
	mgr, err := New(env.Config, o)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
	}()

	// Exercise every controller: each object below is read, listed and
	// given a status by the driver (they fail or wait: no class, no
	// Backup, no application).
	ns := "tenant-a"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	app := backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}
	job := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: app, BackupClassName: "etcd"}}
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "absent"}}}
	plan := &backupsv1alpha1.Plan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: backupsv1alpha1.PlanSpec{ApplicationRef: app, BackupClassName: "etcd",
			Schedule: backupsv1alpha1.PlanSchedule{Cron: "0 3 * * *"}}}
	// The class binds Etcd to an Etcd strategy (which does not exist): the
	// Plan is the driver's.
	class := &backupsv1alpha1.BackupClass{ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "absent"}}}}}
	for _, obj := range []client.Object{class, job, rj, plan} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Conditions).NotTo(BeEmpty())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		g.Expect(rj.Status.Phase).NotTo(BeEmpty())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
		g.Expect(plan.Status.Conditions).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// A Complete snapshot handed to its Backup is history: cached trimmed,
	// whole in the API server.
	yes := true
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap", Annotations: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup",
				Name: "b", UID: "0000", Controller: &yes}}},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{Endpoint: "http://s3", Bucket: "b", Key: "k"}}},
	}
	g.Expect(env.Client.Create(ctx, snap)).To(Succeed())
	snap.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
	snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/k", SizeBytes: 1}
	g.Expect(env.Client.Status().Update(ctx, snap)).To(Succeed())
	cached := &etcdv1alpha2.EtcdSnapshot{}
	g.Eventually(func(g Gomega) {
		g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(snap), cached)).To(Succeed())
		g.Expect(cached.Status.Phase).To(Equal(etcdv1alpha2.SnapshotPhaseComplete))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(cachetrim.Trimmed(cached)).To(BeTrue())
	g.Expect(cached.Spec.Destination.S3).To(BeNil())
	g.Expect(cached.Status.Artifact).To(BeNil())
	g.Expect(cached.OwnerReferences).To(HaveLen(1))
	live := &etcdv1alpha2.EtcdSnapshot{}
	g.Expect(mgr.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(snap), live)).To(Succeed())
	g.Expect(cachetrim.Trimmed(live)).To(BeFalse())
	g.Expect(live.Status.Artifact).NotTo(BeNil())

	// Labelled history (handed over by the driver) leaves the cache.
	snap.Labels = map[string]string{backupsv1alpha1.SnapshotHistoryLabel: "true"}
	g.Expect(env.Client.Update(ctx, snap)).To(Succeed())
	g.Eventually(func() error {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(snap), cached)
	}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("not found")))

	// Every kind the controllers read is cached in one form.
	guard, ok := mgr.GetCache().(*informerguard.Cache)
	g.Expect(ok).To(BeTrue(), "the manager's cache is not guarded")
	kinds := guard.Kinds()
	for _, kind := range []string{"BackupJob", "RestoreJob", "Plan", "Backup", "EtcdSnapshot", "Lease", "ConfigMap"} {
		g.Expect(kinds).To(ContainElement(informerguard.Typed), kind)
		found := false
		for gvk := range kinds {
			found = found || gvk.Kind == kind
		}
		g.Expect(found).To(BeTrue(), "%s is not cached", kind)
	}
	for gvk, form := range kinds {
		want := informerguard.Typed
		if gvk.Kind == "PersistentVolumeClaim" {
			want = informerguard.Metadata
		}
		g.Expect(form).To(Equal(want), gvk.String())
		g.Expect(gvk.Kind).NotTo(Equal("Secret"), "Secrets are read live, never cached")
	}

	// Member PVCs are watched as metadata only; a typed read of one, even
	// before any controller read them, is refused rather than served by
	// a second, whole cache of every member PVC.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-etcd-0",
		Labels: restore.MemberPVCLabels()},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	g.Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pvcMeta := &metav1.PartialObjectMetadata{}
	pvcMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	g.Eventually(func() error {
		return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(pvc), pvcMeta)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
	g.Expect(err).To(MatchError(ContainSubstring("second informer")))
	kinds = guard.Kinds()

	// A metadata-only read of a kind cached typed is refused, not served
	// by a second informer.
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdSnapshot"))
	err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(snap), meta)
	g.Expect(err).To(MatchError(ContainSubstring("second informer")))
	g.Expect(guard.Kinds()).To(Equal(kinds))
}
