package charts

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/legacyvalues"
)

func ensureNamespace(g *WithT, name string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err := env.Client.Create(context.Background(), ns)
	if err != nil {
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
}

// dryRun creates each object with server-side dry-run: the API server runs
// its full admission and schema validation (CRD OpenAPI and CEL rules) and
// stores nothing.
func dryRun(g *WithT, namespace string, objs []*unstructured.Unstructured) {
	ctx := context.Background()
	objs = deepCopies(objs)
	g.Expect(chartrender.SetNamespace(objs, namespace, env.Client.RESTMapper())).To(Succeed())
	for _, obj := range objs {
		g.Expect(env.Client.Create(ctx, obj, client.DryRunAll)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
}

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

func TestEtcdChartObjectsAreAccepted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{name: "defaults"},
		{name: "every value set", values: map[string]any{
			"version": "3.5.21", "size": "20Gi", "storageClass": "replicated", "replicas": 5,
			"resources": map[string]any{"cpu": 2, "memory": "2Gi"},
			"affinity": map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{
				map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "etcd"}}},
			}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := "tenant-dryrun"
			ensureNamespace(g, ns)
			objs, err := chartrender.Render(chartrender.ChartDir("etcd"), chartrender.Release{Name: "etcd", Namespace: ns, Values: tc.values})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveLen(10))
			dryRun(g, ns, objs)
		})
	}
}

// The dry-run is strict enough to catch a bad object: a Certificate without
// its required issuerRef is refused by cert-manager's CRD schema.
func TestDryRunRejectsInvalidObjects(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(g, "tenant-dryrun")
	objs, err := chartrender.Render(chartrender.ChartDir("etcd"), chartrender.Release{Name: "etcd", Namespace: "tenant-dryrun"})
	g.Expect(err).NotTo(HaveOccurred())
	cert := chartrender.Find(objs, "Certificate", "etcd-client").DeepCopy()
	unstructured.RemoveNestedField(cert.Object, "spec", "issuerRef")
	cert.SetNamespace("tenant-dryrun")
	g.Expect(env.Client.Create(context.Background(), cert, client.DryRunAll)).NotTo(Succeed())
}

func TestDriverChartObjectsAreAccepted(t *testing.T) {
	g := NewWithT(t)
	ns := "driver-dryrun"
	ensureNamespace(g, ns)
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "etcd-backup-driver", Namespace: ns,
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartrender.Find(objs, "PrometheusRule", "etcd-backup-driver")).NotTo(BeNil())
	dryRun(g, ns, objs)
}

// What `ebdctl migrate-legacy-values` prints is accepted as it stands.
func TestLegacyMigrationOutputIsAccepted(t *testing.T) {
	g := NewWithT(t)
	ns := "tenant-legacy"
	ensureNamespace(g, ns)
	converted, err := legacyvalues.Convert(legacyvalues.Backup{
		Enabled: true, Schedule: "0 2 * * *", DestinationPath: "s3://etcd-backups/tenant-legacy/",
		EndpointURL: "https://s3.example.com", S3AccessKey: "AK", S3SecretKey: "SK",
	}, legacyvalues.Options{Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, o := range []runtime.Object{converted.Secret, converted.Strategy, converted.Policy, converted.BackupClass, converted.Plan} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		g.Expect(err).NotTo(HaveOccurred())
		delete(m, "status")
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	dryRun(g, ns, objs)
}
