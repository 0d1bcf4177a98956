package apivalidation

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

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
		Spec:       etcdv1alpha2.EtcdClusterSpec{Replicas: &replicas, Bootstrap: bootstrap},
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
	g.Expect(err.Error()).To(ContainSubstring("cannot be added or removed"))
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
	g.Expect(err.Error()).To(ContainSubstring("cannot be added or removed"))

	// Other fields stay editable.
	replicas := int32(5)
	c.Spec.Replicas = &replicas
	g.Expect(k8s.Update(ctx, c)).To(Succeed())
}

func TestEtcdClusterRestoreKeyMustNotBeEmpty(t *testing.T) {
	g := NewWithT(t)
	err := k8s.Create(context.Background(), cluster(newNamespace(t), "etcd", restoreFrom("")))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("non-empty object key"))
}

func TestEtcdClusterPreservesUnknownSpecFields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "etcd-operator.cozystack.io/v1alpha2",
		"kind":       "EtcdCluster",
		"metadata":   map[string]any{"namespace": ns, "name": "etcd"},
		"spec": map[string]any{
			"replicas": int64(3),
			"tls":      map[string]any{"client": map[string]any{"serverSecretRef": map[string]any{"name": "etcd-server-tls"}}},
			"affinity": map[string]any{"podAntiAffinity": map[string]any{}},
		},
	}}
	g.Expect(k8s.Create(ctx, u)).To(Succeed())
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
	name, _, _ := unstructured.NestedString(got.Object, "spec", "tls", "client", "serverSecretRef", "name")
	g.Expect(name).To(Equal("etcd-server-tls"))
	_, found, _ := unstructured.NestedMap(got.Object, "spec", "affinity")
	g.Expect(found).To(BeTrue())
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
		g.Expect(err.Error()).To(ContainSubstring("exactly one of s3 or pvc"), name)
	}
	g.Expect(k8s.Create(ctx, snapshot("s3-only", etcdv1alpha2.SnapshotLocation{S3: s3}))).To(Succeed())
	g.Expect(k8s.Create(ctx, snapshot("pvc-only", etcdv1alpha2.SnapshotLocation{PVC: pvc}))).To(Succeed())
}
