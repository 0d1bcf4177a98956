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

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

const (
	driverNamespace = "ebd-system"
	driverRelease   = "etcd-backup-driver"
)

// installDriverRBAC creates the chart's ServiceAccount, roles and bindings
// for real and returns a rest.Config that acts as that ServiceAccount (and
// nothing more: no admin groups).
func installDriverRBAC(g *WithT) *rest.Config {
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
	cfg := installDriverRBAC(g)
	sa, err := client.New(cfg, client.Options{Scheme: driverscheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	for name, list := range map[string]client.ObjectList{
		"secrets (cluster-wide)":  &corev1.SecretList{},
		"secrets (own namespace)": &corev1.SecretList{},
		"pods":                    &corev1.PodList{},
		"configmaps":              &corev1.ConfigMapList{},
	} {
		var opts []client.ListOption
		if name == "secrets (own namespace)" {
			opts = append(opts, client.InNamespace(driverNamespace))
		}
		err := sa.List(ctx, list, opts...)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", name, err)
	}
	// Outside the leader-election namespace Leases are restore claims: the
	// driver creates and deletes them but never rewrites one, so it cannot
	// take over another holder's Lease (leader election or a claim).
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "not-ours"}}
	g.Expect(env.Client.Create(ctx, lease)).To(Succeed())
	holder := "intruder"
	lease.Spec.HolderIdentity = &holder
	err = sa.Update(ctx, lease)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "update a Lease outside %s: want Forbidden, got %v", driverNamespace, err)
}

// The manager, built exactly as cmd/manager builds it, runs as the chart's
// ServiceAccount: it wins leader election (its Lease in the release
// namespace), its caches sync for every controller registered, its Events
// are written, and it completes a backup end to end (the test plays the
// etcd-operator).
func TestManagerRunsWithChartRBAC(t *testing.T) {
	g := NewWithT(t)
	cfg := installDriverRBAC(g)

	o := manager.DefaultOptions()
	o.MetricsAddr = freeAddr(g)
	o.ProbeAddr = freeAddr(g)
	o.LeaderElect = true
	o.LeaderElectionNamespace = driverNamespace
	o.SkipControllerNameValidation = true
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

	completeBackup(g, ctx)

	// The chart's alerts query metrics the manager really serves.
	scrape := scrapeMetrics(g, "http://"+o.MetricsAddr+"/metrics")
	g.Expect(scrape).To(ContainSubstring(`etcd_backup_driver_last_success_timestamp_seconds{application="etcd",namespace="tenant-rbac"}`))
	g.Expect(scrape).To(MatchRegexp(`etcd_backup_driver_backups_total\{[^}]*result="succeeded"[^}]*\} 1`))
	for _, name := range alertMetrics(g) {
		if strings.HasPrefix(name, "etcd_backup_driver_restores") {
			continue // served once the restore controller is registered
		}
		g.Expect(scrape).To(ContainSubstring(name), "metric of an alert")
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

// alertMetrics lists the driver metrics the chart's PrometheusRule queries.
func alertMetrics(g *WithT) []string {
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: driverRelease, Namespace: driverNamespace,
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	rule := chartrender.Find(objs, "PrometheusRule", driverRelease)
	g.Expect(rule).NotTo(BeNil())
	names := regexp.MustCompile(`etcd_backup_driver_[a-z_]+`).FindAllString(fmt.Sprint(rule.Object["spec"]), -1)
	g.Expect(names).To(HaveLen(3))
	return names
}
