package charts

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// installFieldOwner is the field manager the chart is applied as.
const installFieldOwner = "etcd-backup-driver-chart-install"

// The chart installs for real: what it renders with the values the
// sandbox's container mode uses (alerts and the dashboard on) is applied
// server-side, with strict field validation, and the Deployment the API
// server stores runs exactly the container that container mode runs from
// the image (sandbox.DriverPod, which test/e2e/image starts): the same
// image, command, arguments, user, read-only root and limits.
func TestDriverChartInstallsAsContainerModeRunsIt(t *testing.T) {
	g := NewWithT(t)
	values := sandbox.DriverValues("ghcr.io/etcd-backup-driver/etcd-backup-driver:0.1.0", 8080, 8081, 30*time.Minute, 30*time.Minute)
	values["prometheusRule"] = map[string]any{"enabled": true}
	values["grafanaDashboard"] = map[string]any{"enabled": true}
	objs, err := sandbox.DriverChart(values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(objs)).To(ContainElements("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Deployment", "Service", "PrometheusRule", "ConfigMap"))
	apply(t, g, testenv.DriverNamespace, objs)

	var dep appsv1.Deployment
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.DriverNamespace, Name: sandbox.DriverRelease}, &dep)).To(Succeed())
	stored, err := container.FromPod(&dep.Spec.Template.Spec, &dep.Spec.Template.Spec.Containers[0])
	g.Expect(err).NotTo(HaveOccurred())
	pod, err := sandbox.DriverPod(values)
	g.Expect(err).NotTo(HaveOccurred())
	runs, err := container.FromPod(pod, &pod.Containers[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored).To(Equal(runs))
	g.Expect(stored.User).To(Equal("65532:65532"))
	g.Expect(stored.ReadOnlyRoot).To(BeTrue())
	g.Expect(stored.Args).To(ContainElement("--staging-image=ghcr.io/etcd-backup-driver/etcd-backup-driver:0.1.0"))
	g.Expect(dep.Spec.Template.Spec.Containers[0].SecurityContext).To(Equal(pod.Containers[0].SecurityContext))
	g.Expect(dep.Spec.Template.Spec.SecurityContext).To(Equal(pod.SecurityContext))
}

// The sharded variant (a Deployment per shard and the
// MutatingAdmissionPolicy that labels tenants' objects), with the
// brokered-key RBAC, the alerts, the default strategy and BackupClass and
// the chart's CRDs, applies server-side too.
func TestShardedDriverChartInstalls(t *testing.T) {
	g := NewWithT(t)
	ns := "ebd-shards"
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "ebd-shards", Namespace: ns, IncludeCRDs: true,
		Values: map[string]any{
			"shards": 3, "credentialBroker": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
			"defaultStrategy": map[string]any{"enabled": true, "name": "ebd-shards-default",
				"s3":          map[string]any{"bucket": "etcd-backups", "endpoint": "https://s3.example.com"},
				"backupClass": map[string]any{"name": "ebd-shards-default"}},
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(objs)).To(ContainElements("CustomResourceDefinition", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
		"Etcd", "BackupClass", "PrometheusRule"))
	deployments := 0
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments++
		}
	}
	g.Expect(deployments).To(Equal(3), "one Deployment per shard")
	apply(t, g, ns, objs)
}

func kinds(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	return out
}

// apply applies every object server-side as the chart's field manager,
// with strict field validation, checks that each is there, and removes
// them (except CRDs, which the suite's API server already serves) when
// the test ends, so that the rest of the suite sees none of them.
func apply(t *testing.T, g *WithT, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(g, ns)
	objs = deepCopies(objs)
	g.Expect(chartrender.SetNamespace(objs, ns, env.Client.RESTMapper())).To(Succeed())
	strict := client.WithFieldValidation(env.Client, metav1.FieldValidationStrict)
	for _, o := range objs {
		if o.GetNamespace() != "" {
			ensureNamespace(g, o.GetNamespace())
		}
		if o.GetKind() != "CustomResourceDefinition" {
			t.Cleanup(func() {
				if err := env.Client.Delete(context.Background(), o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			})
		}
		g.Expect(strict.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(installFieldOwner))).
			To(Succeed(), "apply %s %s", o.GetKind(), o.GetName())
	}
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(o), live)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		managed := false
		for _, f := range live.GetManagedFields() {
			managed = managed || (f.Manager == installFieldOwner && f.Operation == metav1.ManagedFieldsOperationApply)
		}
		g.Expect(managed).To(BeTrue(), "%s %s is applied by %s", o.GetKind(), o.GetName(), installFieldOwner)
	}
}
