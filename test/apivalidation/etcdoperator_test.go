package apivalidation

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// These run against the etcd-operator's own CRDs (config/crd/upstream):
// the rules the driver relies on, and the ones a test fixture or a chart
// would otherwise get wrong without noticing.

func restoreFrom(key string) *etcdv1alpha2.BootstrapSpec {
	return &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.RestoreSource{
		S3: &etcdv1alpha2.S3Source{
			Endpoint: "http://s3.local", Bucket: "b", Key: key,
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"},
		},
	}}}
}

func cluster(ns, name string, bootstrap *etcdv1alpha2.BootstrapSpec) *etcdv1alpha2.EtcdCluster {
	replicas := int32(3)
	return &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas, Bootstrap: bootstrap},
	}
}

func TestEtcdClusterBootstrapCannotBeAdded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	c := cluster(ns, "etcd", nil)
	g.Expect(k8s.Create(ctx, c)).To(Succeed())
	c.Spec.Bootstrap = restoreFrom("a.db")
	err := k8s.Update(ctx, c)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.bootstrap cannot be added to or removed from an existing cluster"))
}

func TestEtcdClusterBootstrapCannotBeChangedOrRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	c := cluster(ns, "etcd", restoreFrom("a.db"))
	g.Expect(k8s.Create(ctx, c)).To(Succeed())

	changed := c.DeepCopy()
	changed.Spec.Bootstrap = restoreFrom("b.db")
	err := k8s.Update(ctx, changed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.bootstrap is immutable"))

	removed := c.DeepCopy()
	removed.Spec.Bootstrap = nil
	err = k8s.Update(ctx, removed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("cannot be added to or removed from"))

	// Other fields stay editable.
	replicas := int32(5)
	c.Spec.Replicas = &replicas
	g.Expect(k8s.Update(ctx, c)).To(Succeed())
}

func TestEtcdClusterRestoreKeyMustNotBeEmpty(t *testing.T) {
	g := NewWithT(t)
	err := k8s.Create(context.Background(), cluster(newNamespace(t), "etcd", restoreFrom("")))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("must be the exact (non-empty) object key"))
}

func TestEtcdClusterNeedsAVersion(t *testing.T) {
	g := NewWithT(t)
	c := cluster(newNamespace(t), "etcd", nil)
	c.Spec.Version = ""
	err := k8s.Create(context.Background(), c)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.version"))
}

// spec.options is a closed, typed set: the dashed etcd flag names an
// earlier chart rendered are refused under strict validation and silently
// pruned otherwise, which left members on etcd's default 2GiB quota with no
// compaction.
func TestEtcdClusterOptionsAreTyped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	dashed := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "etcd-operator.cozystack.io/v1alpha2", "kind": "EtcdCluster",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec": map[string]any{
				"version": "3.6.11",
				"options": map[string]any{"quota-backend-bytes": "3221225472", "auto-compaction-mode": "periodic", "snapshotCount": int64(10000)},
			},
		}}
	}
	err := k8s.Create(ctx, dashed("strict"), client.FieldValidation(metav1.FieldValidationStrict))
	g.Expect(apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`unknown field "spec.options.quota-backend-bytes"`))

	g.Expect(k8s.Create(ctx, dashed("lenient"))).To(Succeed())
	var got etcdv1alpha2.EtcdCluster
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lenient"}, &got)).To(Succeed())
	g.Expect(got.Spec.Options.QuotaBackendBytes).To(BeNil(), "pruned")
	g.Expect(got.Spec.Options.SnapshotCount).To(HaveValue(Equal(int64(10000))), "typed fields are kept")

	quota := int64(4080218931)
	typed := cluster(ns, "typed", nil)
	typed.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: &quota, AutoCompactionMode: "periodic", AutoCompactionRetention: "5m"}
	g.Expect(k8s.Create(ctx, typed, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())

	typed.Spec.Options.AutoCompactionMode = "hourly"
	err = k8s.Update(ctx, typed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an unknown compaction mode is refused, got %v", err)
}

// spec.tls can be neither added, removed nor changed: why the chart's TLS
// shape must be the one existing clusters have.
func TestEtcdClusterTLSIsImmutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "etcd-operator.cozystack.io/v1alpha2", "kind": "EtcdCluster",
		"metadata": map[string]any{"namespace": ns, "name": "etcd"},
		"spec": map[string]any{
			"version": "3.6.11",
			"tls": map[string]any{"client": map[string]any{
				"serverSecretRef":         map[string]any{"name": "etcd-server-tls"},
				"operatorClientSecretRef": map[string]any{"name": "etcd-client-tls"},
			}},
		},
	}}
	g.Expect(k8s.Create(ctx, u)).To(Succeed())
	g.Expect(unstructured.SetNestedField(u.Object, "etcd-operator-client-tls", "spec", "tls", "client", "operatorClientSecretRef", "name")).To(Succeed())
	err := k8s.Update(ctx, u)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.tls is immutable"))
}

// The CRD's defaults the stand-in and the driver count on.
func TestEtcdClusterDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t), Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11"},
	}
	g.Expect(k8s.Create(ctx, c)).To(Succeed())
	g.Expect(c.Spec.Replicas).To(HaveValue(Equal(int32(3))))
	g.Expect(c.Spec.ProgressDeadlineSeconds).To(HaveValue(Equal(etcdv1alpha2.DefaultProgressDeadlineSeconds)))
	g.Expect(c.Spec.Storage).NotTo(BeNil())
	g.Expect(c.Spec.Storage.Size.Cmp(resource.MustParse("1Gi"))).To(BeZero())
}

func TestEtcdSnapshotNeedsExactlyOneDestination(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	s3 := &etcdv1alpha2.S3Destination{Endpoint: "http://s3.local", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: "c"}}
	pvc := &etcdv1alpha2.PVCDestination{ClaimName: "claim"}
	snapshot := func(name string, loc etcdv1alpha2.SnapshotLocation) *etcdv1alpha2.EtcdSnapshot {
		return &etcdv1alpha2.EtcdSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: loc},
		}
	}

	for name, loc := range map[string]etcdv1alpha2.SnapshotLocation{
		"both":    {S3: s3, PVC: pvc},
		"neither": {},
	} {
		err := k8s.Create(ctx, snapshot(name, loc))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("exactly one of destination.s3 or destination.pvc must be set"), name)
	}
	g.Expect(k8s.Create(ctx, snapshot("s3-only", etcdv1alpha2.SnapshotLocation{S3: s3}))).To(Succeed())
	g.Expect(k8s.Create(ctx, snapshot("pvc-only", etcdv1alpha2.SnapshotLocation{PVC: pvc}))).To(Succeed())
}

// Every field of the mirror exists in the operator's schema: an object with
// all of them set, spec and status, passes strict validation. A field added
// to the mirror that the operator does not serve fails here.
func TestMirrorFieldsExistUpstream(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	strict := client.WithFieldValidation(k8s, metav1.FieldValidationStrict)

	quota, count, deadline := int64(1<<30), int64(5000), int32(120)
	size, class := resource.MustParse("2Gi"), "fast"
	c := cluster(ns, "everything", restoreFrom("a/b.db"))
	c.Spec.Storage = &etcdv1alpha2.StorageSpec{Size: &size, StorageClassName: &class}
	c.Spec.Options = &etcdv1alpha2.EtcdOptions{QuotaBackendBytes: &quota, AutoCompactionMode: "revision", AutoCompactionRetention: "1000", SnapshotCount: &count}
	c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}
	c.Spec.ProgressDeadlineSeconds = &deadline
	c.Spec.Bootstrap.Restore.Source.S3.Region = "eu-1"
	c.Spec.Bootstrap.Restore.Source.S3.ForcePathStyle = true
	g.Expect(strict.Create(ctx, c)).To(Succeed())

	now := metav1.Now()
	c.Status = etcdv1alpha2.EtcdClusterStatus{
		ClusterID: "0123456789abcdef", ClusterToken: "etcd-token", ReadyMembers: 3, ProgressDeadline: &now,
		Observed:   &etcdv1alpha2.ObservedClusterSpec{Replicas: 3, Version: "3.6.11", Storage: *c.Spec.Storage},
		Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumHealthy", Message: "ok", LastTransitionTime: now, ObservedGeneration: 1}},
	}
	g.Expect(strict.Status().Update(ctx, c)).To(Succeed())

	s := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everything"},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "everything"}, Destination: etcdv1alpha2.SnapshotLocation{
			S3: &etcdv1alpha2.S3Destination{Endpoint: "http://s3.local", Bucket: "b", Key: "p/", Region: "eu-1", ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "c"}},
		}},
	}
	g.Expect(strict.Create(ctx, s)).To(Succeed())
	s.Status = etcdv1alpha2.EtcdSnapshotStatus{
		Phase:      etcdv1alpha2.SnapshotPhaseComplete,
		Artifact:   &etcdv1alpha2.SnapshotArtifact{URI: "s3://b/p/everything.db", SizeBytes: 1, Checksum: "sha256:00"},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "SnapshotStored", Message: "ok", LastTransitionTime: now}},
	}
	g.Expect(strict.Status().Update(ctx, s)).To(Succeed())
}
