package charts

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
)

// tenantNamespace holds the application the RBAC test backs up and restores.
const tenantNamespace = "tenant-rbac"

// The tenant's application objects, as the etcd chart names them.
const (
	appName     = "etcd"
	clusterName = "etcd"
)

// completeRestore restores backup in place against a running driver and
// waits for the RestoreJob to succeed and clean up. The test creates the
// member PVCs and the HelmRelease the chart and the operator would have, and
// plays the etcd-operator and Flux while the restore runs.
func completeRestore(g *WithT, ctx context.Context, backup *backupsv1alpha1.Backup) {
	ns := backup.Namespace
	c := env.Client
	src, err := artifact.Resolve(backup)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 3 {
		g.Expect(c.Create(ctx, memberPVC(ns, fmt.Sprintf("data-%s-%d", clusterName, i)))).To(Succeed())
	}
	g.Expect(c.Create(ctx, &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appName},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}},
		},
	})).To(Succeed())
	old := &etcdv1alpha2.EtcdCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, old)).To(Succeed())

	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac-restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name}},
	}
	g.Expect(c.Create(ctx, job)).To(Succeed())
	waitRestore(g, ctx, job, backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.ConditionReady).Reason).
		To(Equal(string(backupsv1alpha1.ReasonRestoreCompleted)))

	// A new cluster, bootstrapped from exactly the Backup's object.
	restored := &etcdv1alpha2.EtcdCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: clusterName}, restored)).To(Succeed())
	g.Expect(restored.UID).NotTo(Equal(old.UID))
	g.Expect(restored.Spec.Bootstrap).NotTo(BeNil())
	_, key, err := staging.SourceOf(ctx, c, restored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key).To(Equal(src.Key))
	g.Expect(restored.Annotations).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(job.UID)))

	// The application is handed back: HelmRelease resumed and reconciled,
	// claim released, and the safety Backup of the old data recorded.
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		cond := meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	hr := &helmv2.HelmRelease{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: appName}, hr)).To(Succeed())
	g.Expect(hr.Spec.Suspend).To(BeFalse())
	claims := claim.Store{Client: c, Reader: c, Namespace: driverNamespace}
	holder, err := claims.Get(ctx, claim.Target{Namespace: ns, Cluster: clusterName})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holder).To(BeNil())
	var backups backupsv1alpha1.BackupList
	g.Expect(c.List(ctx, &backups, client.InNamespace(ns), client.HasLabels{backupsv1alpha1.SafetyBackupLabel})).To(Succeed())
	g.Expect(backups.Items).To(HaveLen(1))
	g.Expect(backups.Items[0].Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
}

// failRestore runs a RestoreJob the driver must refuse (spec.options of the
// wrong type), so the restore-failure metric the chart alerts on is served.
// Nothing may be changed: the cluster keeps its UID.
func failRestore(g *WithT, ctx context.Context, backup *backupsv1alpha1.Backup) {
	c := env.Client
	before := &etcdv1alpha2.EtcdCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: backup.Namespace, Name: clusterName}, before)).To(Succeed())
	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: backup.Namespace, Name: "rbac-restore-refused"},
		Spec: backupsv1alpha1.RestoreJobSpec{
			BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name},
			Options:   &runtime.RawExtension{Raw: []byte(`{"safetySnapshot":"yes"}`)},
		},
	}
	g.Expect(c.Create(ctx, job)).To(Succeed())
	waitRestore(g, ctx, job, backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.ConditionReady).Reason).
		To(Equal(string(backupsv1alpha1.ReasonMalformedOptions)))
	after := &etcdv1alpha2.EtcdCluster{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(before), after)).To(Succeed())
	g.Expect(after.UID).To(Equal(before.UID))
}

// waitRestore waits for job to reach phase with its finalizer removed.
func waitRestore(g *WithT, ctx context.Context, job *backupsv1alpha1.RestoreJob, phase backupsv1alpha1.RestoreJobPhase) {
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(phase), "status: %+v", job.Status)
		g.Expect(job.Finalizers).To(BeEmpty())
	}).WithTimeout(90*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return fmt.Sprintf("RestoreJob %s/%s", job.Namespace, job.Name)
	})
}

func memberPVC(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: restore.MemberPVCLabels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}
