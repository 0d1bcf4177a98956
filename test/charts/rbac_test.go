package charts

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

const (
	driverNamespace = "ebd-system"
	driverRelease   = "etcd-backup-driver"
)

// installDriverRBAC creates the chart's ServiceAccount, roles and bindings
// for real and returns a rest.Config that acts as that ServiceAccount (and
// nothing more: no admin groups). They are deleted when t ends: the suite's
// other tests dry-run and install the chart under the same names.
func installDriverRBAC(t *testing.T, g *WithT) *rest.Config {
	ensureNamespace(g, driverNamespace)
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"),
		chartrender.Release{Name: driverRelease, Namespace: driverNamespace})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chartrender.SetNamespace(objs, driverNamespace, env.Client.RESTMapper())).To(Succeed())
	installed := 0
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		err := env.Client.Create(context.Background(), obj)
		if !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred(), "%s %s", obj.GetKind(), obj.GetName())
		}
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		})
		installed++
	}
	g.Expect(installed).To(Equal(5))

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + driverNamespace + ":" + driverRelease,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + driverNamespace, "system:authenticated"},
	}
	return cfg
}

func freeAddr(g *WithT) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

// The ServiceAccount holds only what the chart grants: it cannot read
// Secrets in bulk, nor anything the markers do not name.
func TestDriverServiceAccountIsLeastPrivileged(t *testing.T) {
	g := NewWithT(t)
	cfg := installDriverRBAC(t, g)
	sa, err := client.NewWithWatch(cfg, client.Options{Scheme: driverscheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	ensureNamespace(g, "tenant-privilege")
	for name, tc := range map[string]struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		"secrets (cluster-wide)":           {list: &corev1.SecretList{}},
		"secrets (own namespace)":          {list: &corev1.SecretList{}, opts: []client.ListOption{client.InNamespace(driverNamespace)}},
		"configmaps (cluster-wide)":        {list: &corev1.ConfigMapList{}},
		"configmaps (a tenant's)":          {list: &corev1.ConfigMapList{}, opts: []client.ListOption{client.InNamespace("tenant-privilege")}},
		"leases (a tenant's)":              {list: &coordinationv1.LeaseList{}, opts: []client.ListOption{client.InNamespace("tenant-privilege")}},
		"etcdclusters of any name":         {list: &etcdv1alpha2.EtcdClusterList{}, opts: []client.ListOption{client.InNamespace("tenant-privilege")}},
		"helmreleases of any name":         {list: &helmv2.HelmReleaseList{}, opts: []client.ListOption{client.InNamespace("tenant-privilege")}},
		"etcdclusters, another name field": {list: &etcdv1alpha2.EtcdClusterList{}, opts: []client.ListOption{client.MatchingFields{"metadata.name": "other"}}},
	} {
		err := sa.List(ctx, tc.list, tc.opts...)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", name, err)
	}
	// What the driver needs, it has: the one EtcdCluster and HelmRelease
	// name (list and watch through a field selector, as its caches do),
	// and captures and claims in its own namespace.
	for name, tc := range map[string]struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		"etcdclusters named etcd": {list: &etcdv1alpha2.EtcdClusterList{}, opts: []client.ListOption{client.MatchingFields{"metadata.name": "etcd"}}},
		"helmreleases named etcd": {list: &helmv2.HelmReleaseList{}, opts: []client.ListOption{client.MatchingFields{"metadata.name": "etcd"}}},
		"own configmaps":          {list: &corev1.ConfigMapList{}, opts: []client.ListOption{client.InNamespace(driverNamespace)}},
		"own leases":              {list: &coordinationv1.LeaseList{}, opts: []client.ListOption{client.InNamespace(driverNamespace)}},
	} {
		g.Expect(sa.List(ctx, tc.list, tc.opts...)).To(Succeed(), name)
	}
	// The optional kinds' CRDs it checks are installed, each followed by a
	// watch on its name (internal/servedschema), and no other CRD.
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	for _, name := range []string{servedschema.TenantControlPlaneCRD, servedschema.DataStoreCRD} {
		// Kamaji's are followed so that a platform without Kamaji costs
		// no discovery request per restore, and one that adds it is seen.
		byName := client.MatchingFields{"metadata.name": name}
		g.Expect(sa.List(ctx, crds, byName)).To(Succeed(), "list CRD %s by name", name)
		w, err := sa.Watch(ctx, crds, byName)
		g.Expect(err).NotTo(HaveOccurred(), "watch CRD %s by name", name)
		w.Stop()
	}
	for _, other := range []string{"etcdclusters.etcd-operator.cozystack.io", "backups.backups.cozystack.io"} {
		err = sa.List(ctx, crds, client.MatchingFields{"metadata.name": other})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list CRD %s: want Forbidden, got %v", other, err)
	}
	err = sa.List(ctx, crds, client.MatchingFields{"metadata.name": "etcdclusters.etcd-operator.cozystack.io"})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list another CRD: want Forbidden, got %v", err)
	err = sa.List(ctx, crds)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "list every CRD: want Forbidden, got %v", err)
	// Pods: a restore lists a control plane's kube-apiserver Pods (and a
	// failed staging Job's, for its report) and deletes the former to
	// restart them; it never watches, creates or changes a Pod.
	g.Expect(sa.List(ctx, &corev1.PodList{}, client.InNamespace("tenant-privilege"))).To(Succeed(), "list pods")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-privilege", Name: "not-ours"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	err = sa.Create(ctx, pod)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "create a Pod: want Forbidden, got %v", err)
	_, err = sa.Watch(ctx, &corev1.PodList{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "watch Pods: want Forbidden, got %v", err)
	// No Lease outside the driver's namespace may be written: a tenant's
	// Lease is nothing to the driver.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-privilege", Name: "not-ours"}}
	g.Expect(env.Client.Create(ctx, lease)).To(Succeed())
	holder := "intruder"
	lease.Spec.HolderIdentity = &holder
	err = sa.Update(ctx, lease)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "update a Lease outside %s: want Forbidden, got %v", driverNamespace, err)
	err = sa.Delete(ctx, lease)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "delete a Lease outside %s: want Forbidden, got %v", driverNamespace, err)
}

// The manager, built exactly as cmd/manager builds it, runs as the chart's
// ServiceAccount: it wins leader election (its Lease in the release
// namespace), its caches sync for every controller registered, its Events
// are written, and it completes a backup and an in-place restore of that
// backup end to end, and refuses a bad RestoreJob (the test plays the
// etcd-operator and Flux).
func TestManagerRunsWithChartRBAC(t *testing.T) {
	g := NewWithT(t)
	cfg := installDriverRBAC(t, g)

	o := manager.DefaultOptions()
	o.MetricsAddr = freeAddr(g)
	o.ProbeAddr = freeAddr(g)
	o.LeaderElect = true
	o.LeaderElectionNamespace = driverNamespace
	o.Namespace = driverNamespace
	o.ProvenanceSecret = driverRelease + "-provenance"
	o.AllowedEndpointCIDRs = testenv.LoopbackCIDRs
	o.SkipControllerNameValidation = true
	// The chart sets the manager's own image; the stand-in plays the Job.
	o.StagingImage = "ghcr.io/etcd-backup-driver/etcd-backup-driver:test"
	mgr, err := manager.New(cfg, o)
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	}()

	g.Eventually(mgr.Elected()).WithTimeout(60*time.Second).Should(BeClosed(), "leader election with the chart's Role")
	lease := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: driverNamespace, Name: manager.LeaderElectionID}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())

	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	g.Expect(mgr.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue(), "caches sync with the chart's ClusterRole")
	g.Consistently(done).WithTimeout(2*time.Second).ShouldNot(Receive(), "the manager keeps running")

	// Controllers record Events in the tenants' namespaces.
	ensureNamespace(g, "tenant-events")
	regarding := &unstructured.Unstructured{}
	regarding.SetAPIVersion("v1")
	regarding.SetKind("Namespace")
	regarding.SetName("tenant-events")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "tenant-events"}, regarding)).To(Succeed())
	mgr.GetEventRecorder("rbac-test").Eventf(regarding, nil, corev1.EventTypeNormal, "RBACCheck", "Check", "written as the ServiceAccount")
	g.Eventually(func() ([]eventsv1.Event, error) {
		list := &eventsv1.EventList{}
		err := env.Client.List(ctx, list)
		var ours []eventsv1.Event
		for _, e := range list.Items {
			if e.Reason == "RBACCheck" {
				ours = append(ours, e)
			}
		}
		return ours, err
	}).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())

	// The etcd-operator and Flux, played with admin rights.
	testenv.StartOperator(t, env.Client, tenantNamespace, s3c)
	backup := completeBackup(g, ctx)
	// The shared-key check read the tenant's Secret and namespace and
	// wrote the strategy's condition as the ServiceAccount.
	g.Eventually(func(g Gomega) {
		var s strategyv1alpha1.Etcd
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "rbac-strategy"}, &s)).To(Succeed())
		c := meta.FindStatusCondition(s.Status.Conditions, strategyv1alpha1.EtcdConditionSharedCredentials)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(strategyv1alpha1.EtcdReasonCredentialsIsolated))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	completeRestore(g, ctx, backup)
	failRestore(g, ctx, backup)

	// The chart's alerts query series the manager really serves, with the
	// label values they select on.
	scrape := scrapeMetrics(g, "http://"+o.MetricsAddr+"/metrics")
	g.Expect(scrape).To(ContainSubstring(`etcd_backup_driver_last_success_timestamp_seconds{application="etcd",namespace="tenant-rbac"}`))
	g.Expect(scrape).To(MatchRegexp(`etcd_backup_driver_backups_total\{[^}]*result="succeeded"[^}]*\} 1`))
	g.Expect(scrape).To(MatchRegexp(`etcd_backup_driver_restores_total\{reason="RestoreCompleted",result="succeeded"\} 1`))
	g.Expect(scrape).To(MatchRegexp(`etcd_backup_driver_restores_total\{reason="MalformedOptions",result="failed"\} 1`))
	for _, sel := range alertSelectors(g) {
		if strings.HasPrefix(sel.name, "etcd_backup_driver_plan_") || strings.HasPrefix(sel.name, "etcd_backup_driver_credential_broker_") ||
			strings.HasPrefix(sel.name, "etcd_backup_driver_capture_") {
			// No Plan, no brokered strategy (no MinIO) and no capture
			// here; test/alerts evaluates those alerts on a scrape that
			// has them.
			continue
		}
		if sel.name == freshness.MetricHeld {
			// Served only while a Backup is held for a content drop;
			// test/alerts evaluates that alert on a scrape that has one.
			continue
		}
		if sel.name == "etcd_backup_driver_backups_total" {
			// No backup failed here: only the metric's name is checked;
			// its result values are the same as the restores' (asserted
			// above for "succeeded").
			g.Expect(scrape).To(ContainSubstring(sel.name+"{"), "metric of an alert")
			continue
		}
		g.Expect(servesSeries(scrape, sel)).To(BeTrue(), "no served series matches the alert's %s%v", sel.name, sel.matchers)
	}
}

func scrapeMetrics(g *WithT, url string) string {
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// alertSelector is one metric an alert queries, with the label matchers of
// its selector (name="value" only, as the chart's rules use).
type alertSelector struct {
	name     string
	matchers []string
}

// alertSelectors lists the driver metrics the chart's PrometheusRule queries.
func alertSelectors(g *WithT) []alertSelector {
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: driverRelease, Namespace: driverNamespace,
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	rule := chartrender.Find(objs, "PrometheusRule", driverRelease)
	g.Expect(rule).NotTo(BeNil())
	var out []alertSelector
	re := regexp.MustCompile(`(etcd_backup_driver_[a-z_]+)(\{([^}]*)\})?`)
	for _, m := range re.FindAllStringSubmatch(fmt.Sprint(rule.Object["spec"]), -1) {
		sel := alertSelector{name: m[1]}
		if m[3] != "" {
			sel.matchers = strings.Split(m[3], ",")
		}
		for _, matcher := range sel.matchers {
			g.Expect(matcher).To(MatchRegexp(`^[a-z_]+="[^"]*"$`), "only equality matchers are checked")
		}
		out = append(out, sel)
	}
	g.Expect(out).To(HaveLen(21))
	return out
}

// servesSeries reports whether the scrape has a series of sel's metric whose
// labels include every matcher of sel.
func servesSeries(scrape string, sel alertSelector) bool {
	for line := range strings.Lines(scrape) {
		if len(sel.matchers) == 0 && strings.HasPrefix(line, sel.name+" ") {
			return true // a series without labels
		}
		labels, ok := strings.CutPrefix(line, sel.name+"{")
		if !ok {
			continue
		}
		labels, _, _ = strings.Cut(labels, "}")
		have := map[string]bool{}
		for _, l := range strings.Split(labels, ",") {
			have[l] = true
		}
		all := true
		for _, m := range sel.matchers {
			all = all && have[m]
		}
		if all {
			return true
		}
	}
	return false
}
