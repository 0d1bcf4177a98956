package apivalidation

import (
	"context"
	"encoding/json"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// Every object the driver writes is accepted by the served schemas under
// strict field validation (an unknown or misspelt field is an error, not a
// silent prune): the EtcdSnapshots, the re-created EtcdCluster, the Backups,
// the restore claim Lease, the capture ConfigMap and the HelmRelease
// suspend patch, here over the chart's own EtcdCluster. Objects are built
// through the driver's exported builders where there are some
// (backupjob.SnapshotName, artifact.NewBackup, claim.Store); the rest in the
// shape the unexported builders produce. The unexported builders
// themselves are covered where they live: the restore and backup suites
// write through a client with strict field validation, so every object a
// whole restore or backup writes is checked.
func TestDriverWritesPassStrictValidation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	strict := client.WithFieldValidation(k8s, metav1.FieldValidationStrict)
	fps := true

	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly-20260101-0200", UID: types.UID("11111111-2222-3333-4444-555555555555")},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "default",
			PlanRef:         &backupsv1alpha1.LocalObjectReference{Name: "nightly"},
		},
	}
	ownerRef := metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "BackupJob", Name: job.Name, UID: job.UID, Controller: &fps}

	// The BackupJob's EtcdSnapshot (shape of backupjob.newSnapshot).
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: backupjob.SnapshotName(job),
			Labels: map[string]string{
				backupsv1alpha1.OwningJobNamespaceLabel: ns, backupsv1alpha1.OwningJobUIDLabel: string(job.UID),
				backupsv1alpha1.ApplicationNameLabel: "etcd", backupsv1alpha1.OwningJobNameLabel: job.Name, backupsv1alpha1.PlanNameLabel: "nightly",
			},
			Annotations: map[string]string{
				"etcd-backup-driver.cozystack.io/strategy-name":   "default-etcd",
				"etcd-backup-driver.cozystack.io/parameters":      `{"bucket":"etcd-backups"}`,
				"etcd-backup-driver.cozystack.io/deletion-policy": "Retain",
				"etcd-backup-driver.cozystack.io/job-refs":        `{"applicationRef":{"apiGroup":"apps.cozystack.io","kind":"Etcd","name":"etcd"},"planRef":{"name":"nightly"}}`,
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef},
			Finalizers:      []string{backupsv1alpha1.SnapshotRecordFinalizer},
		},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1.LocalObjectReference{Name: backupjob.ClusterName},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint: "https://s3.example.org", Bucket: "etcd-backups", Key: ns + "/etcd/", Region: "us-east-1",
				ForcePathStyle: true, CredentialsSecretRef: corev1.LocalObjectReference{Name: "etcd-backup-s3"},
			}},
		},
	}
	g.Expect(strict.Create(ctx, snap)).To(Succeed(), "BackupJob EtcdSnapshot")

	// The safety EtcdSnapshot (shape of restore.createSafetySnapshot).
	safetySnap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-1-safety", Labels: map[string]string{
			backupsv1alpha1.SafetyBackupLabel: "restore-1", backupsv1alpha1.ApplicationNameLabel: "etcd",
		}},
		Spec: snap.Spec,
	}
	g.Expect(strict.Create(ctx, safetySnap)).To(Succeed(), "safety EtcdSnapshot")

	// The Backup recorded from a completed snapshot (shape of
	// backupjob.newBackup and restore.recordSafetyBackup, with the exported
	// artifact.Record builders).
	snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://etcd-backups/" + ns + "/etcd/" + snap.Name + ".db", SizeBytes: 4096, Checksum: "sha256:" + sha(64)}
	rec := artifact.FromSnapshot(snap, map[string]string{"bucket": "etcd-backups"}, driverv1alpha1.DeletionPolicyRetain)
	rec.EtcdVersion = "3.6.11"
	group := strategyv1alpha1.GroupVersion.Group
	backup, err := artifact.NewBackup(artifact.BackupMeta{
		Namespace: ns, Name: job.Name, Labels: snap.Labels,
		Application: job.Spec.ApplicationRef, Plan: job.Spec.PlanRef,
		Strategy: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default-etcd"},
		TakenAt:  metav1.Now(),
	}, rec, snap.Status.Artifact)
	g.Expect(err).NotTo(HaveOccurred())
	keys := provenance.StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")}}
	g.Expect(provenance.Seal(ctx, keys, backup)).To(Succeed())
	g.Expect(strict.Create(ctx, backup)).To(Succeed(), "Backup")
	backup.Finalizers = nil
	g.Expect(strict.Update(ctx, backup)).To(Succeed(), "Backup finalizer removal")

	// The restore claim, through the exported claim.Acquire and Release.
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-1"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name}},
	}
	g.Expect(strict.Create(ctx, rj)).To(Succeed())
	claims := claim.Store{Client: strict, Reader: k8s, Namespace: ns}
	target := claim.Target{Namespace: ns, Cluster: "etcd"}
	holder, err := claims.Acquire(ctx, rj, target, "etcd")
	g.Expect(err).NotTo(HaveOccurred(), "claim Lease")
	g.Expect(holder.HeldBy(rj)).To(BeTrue())
	var lease coordinationv1.Lease
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.LeaseName(target)}, &lease)).To(Succeed())

	// The live cluster as the chart renders it, then the capture of it and
	// the re-created cluster (shapes of restore.buildCapture and
	// restore.recreateCluster): spec, labels and annotations from the live
	// object, spec.bootstrap.restore.source.s3 and
	// spec.progressDeadlineSeconds set.
	objs, err := chartrender.Render(chartrender.ChartDir("etcd"), chartrender.Release{Name: "etcd", Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	rendered := chartrender.Find(objs, "EtcdCluster", "etcd").DeepCopy()
	rendered.SetNamespace(ns)
	g.Expect(strict.Create(ctx, rendered)).To(Succeed(), "the chart's EtcdCluster")
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendered.GroupVersionKind())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rendered), live)).To(Succeed())

	captured := &unstructured.Unstructured{Object: map[string]any{"spec": live.DeepCopy().Object["spec"]}}
	captured.SetAPIVersion(live.GetAPIVersion())
	captured.SetKind(live.GetKind())
	captured.SetNamespace(ns)
	captured.SetName(live.GetName())
	captured.SetLabels(live.GetLabels())
	captured.SetAnnotations(live.GetAnnotations())
	clusterYAML, err := yaml.Marshal(captured.Object)
	g.Expect(err).NotTo(HaveOccurred())
	capture := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-1-capture", Labels: map[string]string{
			claim.ComponentLabel: "etcd-restore-capture", backupsv1alpha1.ApplicationNameLabel: "etcd",
			backupsv1alpha1.RestoreJobNameLabel: rj.Name, backupsv1alpha1.RestoreJobUIDLabel: string(rj.UID),
		}},
		Data: map[string]string{"etcdcluster.yaml": string(clusterYAML), "helmrelease-prior-state": "NotSuspended",
			"restore-source.yaml": "bucket: etcd-backups\n", "README": "EtcdCluster before the restore."},
	}
	g.Expect(strict.Create(ctx, capture)).To(Succeed(), "capture ConfigMap")

	g.Expect(k8s.Delete(ctx, live)).To(Succeed())
	recreated := captured.DeepCopy()
	g.Expect(unstructured.SetNestedField(recreated.Object, map[string]any{"restore": map[string]any{"source": map[string]any{"s3": map[string]any{
		"bucket": "etcd-backups", "endpoint": "https://s3.example.org", "key": ns + "/etcd/" + snap.Name + ".db",
		"credentialsSecretRef": map[string]any{"name": "etcd-backup-s3"}, "region": "us-east-1", "forcePathStyle": true,
	}}}}, "spec", "bootstrap")).To(Succeed())
	g.Expect(unstructured.SetNestedField(recreated.Object, int64(900), "spec", "progressDeadlineSeconds")).To(Succeed())
	ann := recreated.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[backupsv1alpha1.RestoredByAnnotation], ann[backupsv1alpha1.RestoredFromAnnotation] = string(rj.UID), backup.Name
	recreated.SetAnnotations(ann)
	g.Expect(strict.Create(ctx, recreated)).To(Succeed(), "re-created EtcdCluster")

	// The HelmRelease suspend and resume (shape of restore.setSuspend: a
	// merge patch under an optimistic lock).
	values, _ := json.Marshal(map[string]any{"replicas": 3})
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec: helmv2.HelmReleaseSpec{
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack-apps"},
			}},
			Values: &apiextensionsv1.JSON{Raw: values},
		},
	}
	g.Expect(strict.Create(ctx, hr)).To(Succeed(), "a HelmRelease as the platform creates it")
	for _, suspend := range []bool{true, false} {
		patch := client.MergeFromWithOptions(hr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		hr.Spec.Suspend = suspend
		g.Expect(strict.Patch(ctx, hr, patch)).To(Succeed(), "HelmRelease suspend=%t", suspend)
	}

	g.Expect(claims.Release(ctx, target, holder)).To(Succeed())
}

// Strict validation is what catches a field the schema does not know: the
// same snapshot with one unknown field is refused.
func TestStrictValidationRefusesUnknownFields(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "etcd-operator.cozystack.io/v1alpha2", "kind": "EtcdSnapshot",
		"metadata": map[string]any{"namespace": newNamespace(t), "name": "typo"},
		"spec": map[string]any{
			"clusterRef": map[string]any{"name": "etcd"},
			"destination": map[string]any{"s3": map[string]any{
				"endpoint": "https://s3.example.org", "bucket": "b", "credentialsSecretRef": map[string]any{"name": "c"},
				"pathStyle": true,
			}},
		},
	}}
	err := k8s.Create(context.Background(), u, client.FieldValidation(metav1.FieldValidationStrict))
	g.Expect(err).To(MatchError(ContainSubstring(`unknown field "spec.destination.s3.pathStyle"`)))
}

func sha(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}
