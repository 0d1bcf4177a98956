package apivalidation

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apival-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func TestEtcdStrategyRequiresS3(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	noS3 := &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "no-s3"}}
	err := k8s.Create(ctx, noS3)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.template.destination.s3"))

	ok := &strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: "with-s3"},
		Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{
			Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: "b", Endpoint: "https://s3.example", CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"},
			}},
		}},
	}
	g.Expect(k8s.Create(ctx, ok)).To(Succeed())
}

func TestBackupJobClassNameIsImmutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "first",
		},
	}
	g.Expect(k8s.Create(ctx, job)).To(Succeed())

	job.Spec.BackupClassName = "second"
	err := k8s.Update(ctx, job)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("backupClassName is immutable"))

	empty := job.DeepCopy()
	empty.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "empty-class"}
	empty.Spec.BackupClassName = ""
	g.Expect(apierrors.IsInvalid(k8s.Create(ctx, empty))).To(BeTrue(), "an empty backupClassName is rejected")
}

func TestBackupKeepsStatusWrittenOnCreate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	underlying, err := json.Marshal(map[string]any{
		"kind": "EtcdBackupSnapshot", "apiVersion": "backups.cozystack.io/v1alpha1",
		"destination": map[string]any{"s3": map[string]any{"bucket": "b", "somethingNew": "kept"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	backup := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b1"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "default"},
			TakenAt:        metav1.Now(),
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:               backupsv1alpha1.BackupPhaseReady,
			Artifact:            &backupsv1alpha1.BackupArtifact{URI: "s3://b/k.db", SizeBytes: 42, Checksum: "sha256:00"},
			UnderlyingResources: &runtime.RawExtension{Raw: underlying},
		},
	}
	g.Expect(k8s.Create(ctx, backup)).To(Succeed())

	var got backupsv1alpha1.Backup
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(backup), &got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
	g.Expect(got.Status.Artifact).To(Equal(backup.Status.Artifact))
	g.Expect(string(got.Status.UnderlyingResources.Raw)).To(ContainSubstring(`"somethingNew":"kept"`))
}

func TestScopes(t *testing.T) {
	g := NewWithT(t)
	cases := map[schema.GroupKind]bool{ // kind -> namespaced
		{Group: "backups.cozystack.io", Kind: "BackupClass"}:        false,
		{Group: "backups.cozystack.io", Kind: "Plan"}:               true,
		{Group: "backups.cozystack.io", Kind: "BackupJob"}:          true,
		{Group: "backups.cozystack.io", Kind: "Backup"}:             true,
		{Group: "backups.cozystack.io", Kind: "RestoreJob"}:         true,
		{Group: "strategy.backups.cozystack.io", Kind: "Etcd"}:      false,
		{Group: "etcd-operator.cozystack.io", Kind: "EtcdCluster"}:  true,
		{Group: "etcd-operator.cozystack.io", Kind: "EtcdSnapshot"}: true,
		{Group: "apps.cozystack.io", Kind: "Etcd"}:                  true,
		{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}:      true,
	}
	for gk, namespaced := range cases {
		m, err := k8s.RESTMapper().RESTMapping(gk)
		g.Expect(err).NotTo(HaveOccurred(), "%s is served", gk)
		g.Expect(m.Scope.Name() == "namespace").To(Equal(namespaced), "%s scope", gk)
	}
}
