package charts

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
)

// applyStrict server-side applies objs as manager, with strict field
// validation: a field the served schema does not know (a dashed etcd flag
// under spec.options) is an error, not a silent prune. The typed Apply
// method takes no field-validation option, hence the apply patch.
func applyStrict(ctx context.Context, manager string, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		//nolint:staticcheck // client.Apply is the apply patch that carries fieldValidation.
		if err := env.Client.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner(manager), client.ForceOwnership,
			client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			return err
		}
	}
	return nil
}

func renderInto(g *WithT, ns string, values map[string]any) []*unstructured.Unstructured {
	objs, err := chartrender.Render(chartrender.ChartDir("etcd"), chartrender.Release{Name: "etcd", Namespace: ns, Values: values})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartrender.SetNamespace(objs, ns, env.Client.RESTMapper())).To(Succeed())
	return objs
}

func liveCluster(g *WithT, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("etcd-operator.cozystack.io/v1alpha2")
	u.SetKind("EtcdCluster")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd"}, u)).To(Succeed())
	return u
}

// Every object the chart renders, with the defaults and with every value
// overridden, is server-side applied under strict validation on the
// etcd-operator's and cert-manager's own CRDs, and the EtcdCluster keeps
// the typed options the operator reads.
func TestEtcdChartAppliesStrictlyOnUpstreamCRDs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ns        string
		values    map[string]any
		quota     int64
		storage   map[string]any
		resources map[string]any
	}{
		{name: "defaults", ns: "tenant-ssa-defaults", quota: 4080218931, storage: map[string]any{"size": "4Gi", "medium": ""},
			resources: map[string]any{"requests": map[string]any{"cpu": "1000m", "memory": "512Mi"}, "limits": map[string]any{"memory": "512Mi"}}},
		{name: "overrides", ns: "tenant-ssa-overrides", values: map[string]any{
			"version": "3.5.21", "size": "20Gi", "storageClass": "replicated", "replicas": 5,
			"resources": map[string]any{"cpu": "2", "memory": "2Gi"},
			"affinity": map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{
				map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "etcd"}}},
			}}},
		}, quota: 20401094656, storage: map[string]any{"size": "20Gi", "storageClassName": "replicated", "medium": ""},
			resources: map[string]any{"requests": map[string]any{"cpu": "2", "memory": "2Gi"}, "limits": map[string]any{"memory": "2Gi"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ensureNamespace(g, tc.ns)
			objs := renderInto(g, tc.ns, tc.values)
			g.Expect(applyStrict(ctx, "helm-controller", objs...)).To(Succeed())

			live := liveCluster(g, tc.ns)
			spec := live.Object["spec"].(map[string]any)
			g.Expect(spec["options"]).To(Equal(map[string]any{
				"quotaBackendBytes": tc.quota, "autoCompactionMode": "periodic", "autoCompactionRetention": "5m", "snapshotCount": int64(10000),
			}))
			g.Expect(spec["storage"]).To(Equal(tc.storage))
			g.Expect(spec["resources"]).To(Equal(tc.resources))
			g.Expect(spec["additionalMetadata"]).To(Equal(map[string]any{"labels": map[string]any{"cozystack.io/service": "etcd"}}))
			name, _, _ := unstructured.NestedString(live.Object, "spec", "tls", "client", "operatorClientSecretRef", "name")
			g.Expect(name).To(Equal("etcd-client-tls"))
			g.Expect(spec["progressDeadlineSeconds"]).To(BeEquivalentTo(600), "the operator's default")
		})
	}
}

// platformCluster is an EtcdCluster of the shape the platform's own etcd
// chart creates today (Cozystack's packages/extra/etcd): typed options with
// a 95% quota, the root client certificate as the operator's, the
// cozystack.io/service label, a topology spread instead of affinity.
func platformCluster(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "etcd-operator.cozystack.io/v1alpha2", "kind": "EtcdCluster",
		"metadata": map[string]any{"namespace": ns, "name": "etcd"},
		"spec": map[string]any{
			"version": "3.6.11", "replicas": int64(3),
			"storage": map[string]any{"size": "4Gi"},
			"options": map[string]any{
				"quotaBackendBytes": int64(4080218931), "autoCompactionMode": "periodic", "autoCompactionRetention": "5m", "snapshotCount": int64(10000),
			},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "512Mi"},
				"limits":   map[string]any{"cpu": "1", "memory": "512Mi"},
			},
			"additionalMetadata": map[string]any{"labels": map[string]any{"cozystack.io/service": "etcd"}},
			"tls": map[string]any{
				"client": map[string]any{
					"serverSecretRef":         map[string]any{"name": "etcd-server-tls"},
					"operatorClientSecretRef": map[string]any{"name": "etcd-client-tls"},
				},
				"peer": map[string]any{"secretRef": map[string]any{"name": "etcd-peer-tls"}},
			},
			"topologySpreadConstraints": []any{map[string]any{
				"maxSkew": int64(1), "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "etcd"}},
			}},
		},
	}}
}

// The chart upgrades a cluster the platform already runs: applied over it
// (as helm-controller would, a different field manager) it is accepted,
// because spec.tls, spec.storage.storageClassName and spec.bootstrap, which
// the operator makes immutable, keep their shape. That holds for a cluster
// an in-place restore re-created too: the chart never renders
// spec.bootstrap, so it is left as the restore wrote it. The chart's old TLS
// shape (a separate operator client certificate) would be refused.
func TestEtcdChartUpgradesAPlatformCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ns       string
		restored bool
	}{
		{name: "as installed", ns: "tenant-upgrade"},
		{name: "after an in-place restore", ns: "tenant-upgrade-restored", restored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ensureNamespace(g, tc.ns)
			existing := platformCluster(tc.ns)
			if tc.restored {
				g.Expect(unstructured.SetNestedMap(existing.Object, map[string]any{"restore": map[string]any{"source": map[string]any{"s3": map[string]any{
					"endpoint": "https://s3.example.org", "bucket": "etcd-backups", "key": tc.ns + "/etcd/nightly.db",
					"credentialsSecretRef": map[string]any{"name": "etcd-backup-s3"},
				}}}}, "spec", "bootstrap")).To(Succeed())
			}
			g.Expect(env.Client.Create(ctx, existing, client.FieldOwner("platform-helm"), client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())

			objs := renderInto(g, tc.ns, map[string]any{"size": "4Gi", "replicas": 3})
			cluster := chartrender.Find(objs, "EtcdCluster", "etcd")
			g.Expect(applyStrict(ctx, "helm-controller", cluster)).To(Succeed())

			live := liveCluster(g, tc.ns)
			quota, _, _ := unstructured.NestedInt64(live.Object, "spec", "options", "quotaBackendBytes")
			g.Expect(quota).To(Equal(int64(4080218931)))
			_, hasBootstrap, _ := unstructured.NestedMap(live.Object, "spec", "bootstrap")
			g.Expect(hasBootstrap).To(Equal(tc.restored), "spec.bootstrap is left as it was")

			old := cluster.DeepCopy()
			g.Expect(unstructured.SetNestedField(old.Object, "etcd-operator-client-tls", "spec", "tls", "client", "operatorClientSecretRef", "name")).To(Succeed())
			err := applyStrict(ctx, "helm-controller", old)
			g.Expect(err).To(MatchError(ContainSubstring("spec.tls is immutable")), "the immutable TLS shape is what makes the upgrade work")
		})
	}
}
