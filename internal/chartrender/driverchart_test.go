package chartrender

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const driverNS = "cozy-etcd-backup"

func renderDriver(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS, Values: values, IncludeCRDs: true})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

func managerContainer(g *WithT, objs []*unstructured.Unstructured) map[string]any {
	dep := Find(objs, "Deployment", "etcd-backup-driver")
	g.Expect(dep).NotTo(BeNil())
	containers := field(g, dep, "spec", "template", "spec", "containers").([]any)
	g.Expect(containers).To(HaveLen(1))
	return containers[0].(map[string]any)
}

func TestDriverDeploymentIsHardened(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, nil)
	dep := Find(objs, "Deployment", "etcd-backup-driver")
	g.Expect(field(g, dep, "spec", "replicas")).To(BeEquivalentTo(2))
	g.Expect(field(g, dep, "spec", "template", "spec", "serviceAccountName")).To(Equal("etcd-backup-driver"))
	g.Expect(field(g, dep, "spec", "template", "spec", "securityContext", "runAsNonRoot")).To(BeTrue())
	c := managerContainer(g, objs)
	g.Expect(c["securityContext"]).To(Equal(map[string]any{
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   true,
		"capabilities":             map[string]any{"drop": []any{"ALL"}},
	}))
	g.Expect(c).To(HaveKey("livenessProbe"))
	g.Expect(c).To(HaveKey("readinessProbe"))
	g.Expect(c["resources"]).To(HaveKey("requests"))
	g.Expect(c["image"]).To(Equal("ghcr.io/etcd-backup-driver/etcd-backup-driver:0.1.0"))
	g.Expect(c["args"]).To(ConsistOf(
		"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--leader-elect=true", "--leader-election-namespace="+driverNS, "--namespace="+driverNS,
		"--provenance-secret=etcd-backup-driver-provenance",
		"--max-concurrent-reconciles=4", "--backup-deadline=30m", "--restore-deadline=30m", "--zap-log-level=info",
		// The staging Job runs the manager's own image.
		"--staging-image=ghcr.io/etcd-backup-driver/etcd-backup-driver:0.1.0",
	))
	svc := Find(objs, "Service", "etcd-backup-driver-metrics")
	g.Expect(field(g, svc, "spec", "ports")).To(ContainElement(HaveKeyWithValue("port", BeEquivalentTo(8080))))
	g.Expect(Find(objs, "ServiceAccount", "etcd-backup-driver")).NotTo(BeNil())
	g.Expect(Find(objs, "PrometheusRule", "etcd-backup-driver")).To(BeNil(), "alerts are opt-in")
}

// Every manager flag has a value.
func TestDriverFlagsFollowValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		arg    string
	}{
		{"metrics port", map[string]any{"metrics": map[string]any{"port": 9090}}, "--metrics-bind-address=:9090"},
		{"metrics off", map[string]any{"metrics": map[string]any{"enabled": false}}, "--metrics-bind-address=0"},
		{"probe port", map[string]any{"probes": map[string]any{"port": 9091}}, "--health-probe-bind-address=:9091"},
		{"leader election off", map[string]any{"replicas": 1, "leaderElection": map[string]any{"enabled": false}}, "--leader-elect=false"},
		{"lease namespace", map[string]any{"leaderElection": map[string]any{"namespace": "elsewhere"}}, "--leader-election-namespace=elsewhere"},
		{"concurrency", map[string]any{"maxConcurrentReconciles": 8}, "--max-concurrent-reconciles=8"},
		{"backup deadline", map[string]any{"backupDeadline": "1h"}, "--backup-deadline=1h"},
		{"restore deadline", map[string]any{"restoreDeadline": "2h"}, "--restore-deadline=2h"},
		{"log level", map[string]any{"logLevel": "debug"}, "--zap-log-level=debug"},
		{"extra args", map[string]any{"extraArgs": []any{"--zap-encoder=console"}}, "--zap-encoder=console"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(managerContainer(g, renderDriver(t, tc.values))["args"]).To(ContainElement(tc.arg))
		})
	}
	t.Run("an S3 CA bundle is mounted from its ConfigMap and named by --s3-ca-file", func(t *testing.T) {
		g := NewWithT(t)
		objs := renderDriver(t, map[string]any{"s3CA": map[string]any{"configMap": "corp-ca", "key": "bundle.pem"}})
		c := managerContainer(g, objs)
		g.Expect(c["args"]).To(ContainElement("--s3-ca-file=/etc/etcd-backup-driver/s3-ca/bundle.pem"))
		g.Expect(c["volumeMounts"]).To(ConsistOf(And(HaveKeyWithValue("name", "s3-ca"),
			HaveKeyWithValue("mountPath", "/etc/etcd-backup-driver/s3-ca"), HaveKeyWithValue("readOnly", true))))
		d := Find(objs, "Deployment", "etcd-backup-driver")
		g.Expect(field(g, d, "spec", "template", "spec", "volumes")).To(ConsistOf(And(HaveKeyWithValue("name", "s3-ca"),
			HaveKeyWithValue("configMap", HaveKeyWithValue("name", "corp-ca")))))
		plain := managerContainer(g, renderDriver(t, nil))
		g.Expect(plain).NotTo(HaveKey("volumeMounts"), "nothing mounted unless asked")
		g.Expect(fmt.Sprint(plain["args"])).NotTo(ContainSubstring("--s3-ca-file"))
	})
	t.Run("metrics off drops the Service", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(Find(renderDriver(t, map[string]any{"metrics": map[string]any{"enabled": false}}), "Service", "etcd-backup-driver-metrics")).To(BeNil())
	})
	t.Run("lease Role follows the lease namespace", func(t *testing.T) {
		g := NewWithT(t)
		objs := renderDriver(t, map[string]any{"leaderElection": map[string]any{"namespace": "elsewhere"}})
		role := Find(objs, "Role", "etcd-backup-driver-leader-election")
		g.Expect(role.GetNamespace()).To(Equal("elsewhere"))
		g.Expect(field(g, role, "rules")).To(ConsistOf(HaveKeyWithValue("resources", ConsistOf("leases"))))
		g.Expect(Find(objs, "Role", "etcd-backup-driver").GetNamespace()).To(Equal(driverNS), "the driver's own Role stays home")
	})
	t.Run("no extra Role when the lease is at home", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(Find(renderDriver(t, nil), "Role", "etcd-backup-driver-leader-election")).To(BeNil())
	})
	t.Run("two replicas need leader election", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS,
			Values: map[string]any{"leaderElection": map[string]any{"enabled": false}}})
		g.Expect(err).To(MatchError(ContainSubstring("replicas > 1 needs leaderElection.enabled=true")))
	})
}

// The chart's RBAC is config/rbac/role.yaml, as generated from the markers,
// and never lets the driver list or watch Secrets.
func TestDriverRBACIsTheGeneratedRole(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, nil)
	generated, err := os.ReadFile(filepath.Join(ChartDir("etcd-backup-driver"), "..", "..", "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var wantCluster, wantNamespaced []any
	for _, doc := range strings.Split(string(generated), "\n---\n") {
		m := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(doc), &m)).To(Succeed())
		rules, _ := m["rules"].([]any)
		switch m["kind"] {
		case "ClusterRole":
			wantCluster = append(wantCluster, rules...)
		case "Role":
			wantNamespaced = append(wantNamespaced, rules...)
		}
	}
	normalize := func(v any) any {
		b, err := yaml.Marshal(v)
		g.Expect(err).NotTo(HaveOccurred())
		var out any
		g.Expect(yaml.Unmarshal(b, &out)).To(Succeed())
		return out
	}
	cr := Find(objs, "ClusterRole", "etcd-backup-driver")
	g.Expect(normalize(cr.Object["rules"])).To(Equal(normalize(wantCluster)))
	role := Find(objs, "Role", "etcd-backup-driver")
	g.Expect(role.GetNamespace()).To(Equal(driverNS))
	g.Expect(normalize(role.Object["rules"])).To(Equal(normalize(wantNamespaced)))
	g.Expect(normalize(role.Object["rules"])).To(ContainElement(HaveKeyWithValue("resources", ContainElement("leases"))))

	for _, rule := range cr.Object["rules"].([]any) {
		r := rule.(map[string]any)
		groups, _ := r["apiGroups"].([]any)
		resources, _ := r["resources"].([]any)
		verbs, _ := r["verbs"].([]any)
		g.Expect(resources).NotTo(ContainElement("*"), "no wildcard resources")
		g.Expect(verbs).NotTo(ContainElement("*"), "no wildcard verbs")
		if (len(groups) == 0 || containsAny(groups, "")) && containsAny(resources, "secrets") {
			g.Expect(verbs).NotTo(ContainElement("list"), "Secrets are read by name only")
			g.Expect(verbs).NotTo(ContainElement("watch"), "Secrets are read by name only")
		}
	}
	binding := Find(objs, "ClusterRoleBinding", "etcd-backup-driver")
	g.Expect(field(g, binding, "subjects")).To(Equal([]any{map[string]any{"kind": "ServiceAccount", "name": "etcd-backup-driver", "namespace": driverNS}}))
}

// The generated role is least privilege where a tenant could otherwise
// reach: EtcdClusters and HelmReleases by name only (create cannot be
// restricted by name), Leases and ConfigMaps only in the driver's own
// namespace, Secrets get only (create only at home, for the provenance
// key), and update on exactly the finalizers subresources that
// blockOwnerDeletion needs.
func TestGeneratedRoleIsLeastPrivileged(t *testing.T) {
	g := NewWithT(t)
	generated, err := os.ReadFile(filepath.Join(ChartDir("etcd-backup-driver"), "..", "..", "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	type rule struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	}
	rules := map[string][]rule{}
	for _, doc := range strings.Split(string(generated), "\n---\n") {
		var m struct {
			Kind  string `json:"kind"`
			Rules []rule `json:"rules"`
		}
		g.Expect(yaml.Unmarshal([]byte(doc), &m)).To(Succeed())
		rules[m.Kind] = append(rules[m.Kind], m.Rules...)
	}
	grants := func(kind, group, resource string) (names []string, verbs []string) {
		for _, r := range rules[kind] {
			for _, res := range r.Resources {
				if res == resource && slices.Contains(r.APIGroups, group) {
					if len(r.ResourceNames) > 0 {
						names = append(names, r.ResourceNames...)
					} else {
						verbs = append(verbs, r.Verbs...)
					}
				}
			}
		}
		return names, verbs
	}
	for _, res := range []struct{ group, resource string }{{"etcd-operator.cozystack.io", "etcdclusters"}, {"helm.toolkit.fluxcd.io", "helmreleases"}} {
		names, unnamed := grants("ClusterRole", res.group, res.resource)
		g.Expect(names).To(ConsistOf("etcd"), res.resource)
		for _, v := range unnamed {
			g.Expect(v).To(Equal("create"), "%s: only create (which names cannot restrict) is granted without resourceNames", res.resource)
		}
	}
	for _, res := range []string{"leases", "configmaps"} {
		group := ""
		if res == "leases" {
			group = "coordination.k8s.io"
		}
		_, cluster := grants("ClusterRole", group, res)
		g.Expect(cluster).To(BeEmpty(), "%s only in the driver's namespace", res)
		_, own := grants("Role", group, res)
		g.Expect(own).NotTo(BeEmpty(), res)
	}
	_, secrets := grants("ClusterRole", "", "secrets")
	g.Expect(secrets).To(ConsistOf("get"))
	_, ownSecrets := grants("Role", "", "secrets")
	g.Expect(ownSecrets).To(ConsistOf("get", "create"))
	for _, f := range []string{"backupjobs/finalizers", "backups/finalizers", "restorejobs/finalizers"} {
		_, verbs := grants("ClusterRole", "backups.cozystack.io", f)
		g.Expect(verbs).To(ConsistOf("update"), f)
	}
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The chart ships the driver's own StrategyPolicy CRD, the backups kinds,
// and Cozystack's Etcd strategy CRD exactly as pinned (no strategy CRD of
// the driver's own exists).
func TestDriverShipsTheCRDs(t *testing.T) {
	g := NewWithT(t)
	var crds []string
	for _, o := range renderDriver(t, nil) {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	g.Expect(crds).To(ConsistOf(
		"backupclasses.backups.cozystack.io", "plans.backups.cozystack.io", "backupjobs.backups.cozystack.io",
		"backups.backups.cozystack.io", "restorejobs.backups.cozystack.io", "etcds.strategy.backups.cozystack.io",
		"strategypolicies.etcd-backup-driver.cozystack.io", "captureprogresses.etcd-backup-driver.cozystack.io",
	))
	const strategyCRD = "strategy.backups.cozystack.io_etcds.yaml"
	shipped, err := os.ReadFile(filepath.Join(ChartDir("etcd-backup-driver"), "crds", strategyCRD))
	g.Expect(err).NotTo(HaveOccurred())
	pinned, err := os.ReadFile(filepath.Join(ChartDir("etcd-backup-driver"), "..", "..", "config", "crd", "upstream", "cozystack", strategyCRD))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(shipped)).To(Equal(string(pinned)), "the chart's strategy CRD is Cozystack's as pinned")
}

func TestDriverPrometheusRule(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, map[string]any{"prometheusRule": map[string]any{
		"enabled": true, "noSuccessfulBackupFor": "2h", "labels": map[string]any{"release": "prom"},
	}})
	rule := Find(objs, "PrometheusRule", "etcd-backup-driver")
	g.Expect(rule).NotTo(BeNil())
	g.Expect(rule.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	groups := field(g, rule, "spec", "groups").([]any)
	rules := groups[0].(map[string]any)["rules"].([]any)
	byName := map[string]map[string]any{}
	for _, r := range rules {
		byName[r.(map[string]any)["alert"].(string)] = r.(map[string]any)
	}
	g.Expect(byName).To(HaveLen(14))
	for _, name := range []string{"EtcdBackupStale", "EtcdBackupMissing", "EtcdBackupTooOld", "EtcdBackupUnverified", "EtcdBackupRehearsalOverdue", "EtcdBackupContentDrop",
		"EtcdBackupFailing", "EtcdRestoreFailed", "EtcdBackupSharedCredentials", "EtcdBackupBrokerPlatformKeys",
		"EtcdBackupDriverDown", "EtcdBackupDriverNoLeader", "EtcdBackupPointInTimeLagging"} {
		g.Expect(byName).To(HaveKey(name))
	}
	g.Expect(byName["EtcdBackupTooOld"]["expr"]).To(ContainSubstring("> 7200"))
	g.Expect(byName["EtcdBackupStale"]["expr"]).To(ContainSubstring("1.5 * min by (namespace, application) (etcd_backup_driver_plan_interval_seconds)"))
	g.Expect(byName["EtcdBackupDriverDown"]["expr"]).To(Equal(`absent(up{job="etcd-backup-driver-metrics"} == 1)`))
	g.Expect(byName["EtcdBackupSharedCredentials"]["annotations"]).To(HaveKeyWithValue("summary", ContainSubstring("{{ $labels.strategy }}")))
	// Prometheus's own template syntax survives Helm's rendering.
	g.Expect(byName["EtcdRestoreFailed"]["annotations"]).To(HaveKeyWithValue("summary", ContainSubstring("{{ $labels.reason }}")))

	_, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS,
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true, "noSuccessfulBackupFor": "1d"}}})
	g.Expect(err).To(MatchError(ContainSubstring("/prometheusRule/noSuccessfulBackupFor")))
	rule = Find(renderDriver(t, map[string]any{"prometheusRule": map[string]any{"enabled": true, "staleFactor": 2, "scrapeJob": "ebd"}}),
		"PrometheusRule", "etcd-backup-driver")
	g.Expect(fmt.Sprint(rule.Object["spec"])).To(And(ContainSubstring("2 * min by"), ContainSubstring(`up{job="ebd"}`)))
	_, err = Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS,
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true, "staleFactor": 0}}})
	g.Expect(err).To(MatchError(ContainSubstring("/prometheusRule/staleFactor")))
}

// The dashboard ships as a ConfigMap for Grafana's sidecar, off by default;
// its JSON parses and queries only the driver's metrics and the scrape's own.
func TestDriverGrafanaDashboard(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Find(renderDriver(t, nil), "ConfigMap", "etcd-backup-driver-dashboard")).To(BeNil(), "opt-in")
	cm := Find(renderDriver(t, map[string]any{"grafanaDashboard": map[string]any{"enabled": true, "namespace": "monitoring"}}),
		"ConfigMap", "etcd-backup-driver-dashboard")
	g.Expect(cm).NotTo(BeNil())
	g.Expect(cm.GetNamespace()).To(Equal("monitoring"))
	g.Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"))
	raw := field(g, cm, "data", "etcd-backup-driver.json").(string)
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	g.Expect(json.Unmarshal([]byte(raw), &dash)).To(Succeed())
	g.Expect(dash.UID).To(Equal("etcd-backup-driver"))
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			g.Expect(tg.Expr).To(MatchRegexp(`etcd_backup_driver_|up\{|leader_election_master_status`), p.Title)
		}
	}
	g.Expect(exprs).To(BeNumerically(">=", 10))
}

func TestDriverValuesSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"deadline not a duration", map[string]any{"backupDeadline": "soon"}, "/backupDeadline"},
		{"concurrency as a string", map[string]any{"maxConcurrentReconciles": "4"}, "/maxConcurrentReconciles"},
		{"unknown log level", map[string]any{"logLevel": "verbose"}, "/logLevel"},
		{"port out of range", map[string]any{"metrics": map[string]any{"port": 70000}}, "/metrics/port"},
		{"typo", map[string]any{"replica": 1}, "'replica' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS, Values: tc.values})
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// The default strategy and class are opt-in; asked for, they are the
// strategy with the values' destination, its StrategyPolicy with the
// values' settings (Cozystack's strategy kind holds none of them), and a
// BackupClass binding apps.cozystack.io/Etcd to it, as Cozystack's
// cozy-default binds cozy-default-etcd.
func TestDefaultStrategyIsRenderedOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, nil)
	g.Expect(Find(objs, "Etcd", "etcd-default")).To(BeNil(), "off by default")
	g.Expect(Find(objs, "BackupClass", "etcd-default")).To(BeNil(), "off by default")
	g.Expect(Find(objs, "StrategyPolicy", "etcd-default")).To(BeNil(), "off by default")

	asked := map[string]any{"defaultStrategy": map[string]any{"enabled": true, "name": "platform-etcd",
		"s3":          map[string]any{"bucket": "etcd-backups", "endpoint": "https://s3.example.com", "region": "eu-1"},
		"backupClass": map[string]any{"name": "platform"}}}
	objs = renderDriver(t, asked)
	strategy := Find(objs, "Etcd", "platform-etcd")
	g.Expect(strategy).NotTo(BeNil())
	g.Expect(strategy.GetAPIVersion()).To(Equal("strategy.backups.cozystack.io/v1alpha1"))
	g.Expect(strategy.Object["spec"]).To(HaveLen(1), "Cozystack's strategy kind serves the template only")
	policy := Find(objs, "StrategyPolicy", "platform-etcd")
	g.Expect(policy).NotTo(BeNil())
	g.Expect(policy.GetAPIVersion()).To(Equal("etcd-backup-driver.cozystack.io/v1alpha1"))
	g.Expect(policy.Object["spec"]).To(Equal(map[string]any{"deletionPolicy": "Retain"}))
	g.Expect(field(g, strategy, "spec", "template", "destination", "s3")).To(Equal(map[string]any{
		"bucket": "etcd-backups", "endpoint": "https://s3.example.com", "region": "eu-1", "forcePathStyle": true,
		// The template is passed on as it is, for the driver to render.
		"key":                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
		"credentialsSecretRef": map[string]any{"name": "etcd-backup-s3"},
	}))
	class := Find(objs, "BackupClass", "platform")
	g.Expect(class).NotTo(BeNil())
	g.Expect(field(g, class, "spec", "strategies")).To(Equal([]any{map[string]any{
		"application": map[string]any{"apiGroup": "apps.cozystack.io", "kind": "Etcd"},
		"strategyRef": map[string]any{"apiGroup": "strategy.backups.cozystack.io", "kind": "Etcd", "name": "platform-etcd"},
	}}))

	// Every setting of the policy comes from the values, as they are.
	broker := map[string]any{"provider": "MinIO", "adminSecretRef": map[string]any{"name": "platform-s3"}, "prefixRoot": "etcd/"}
	settings := map[string]any{"defaultStrategy": map[string]any{"enabled": true, "name": "platform-etcd",
		"deletionPolicy": "Delete", "allowHTTPEndpoint": true, "credentialBroker": broker,
		"inspection": map[string]any{"maxNamespacesGone": 2}, "retention": map[string]any{"maxKeepLast": 30},
		"s3": map[string]any{"bucket": "etcd-backups", "endpoint": "http://minio.storage:9000"}}}
	policy = Find(renderDriver(t, settings), "StrategyPolicy", "platform-etcd")
	g.Expect(policy).NotTo(BeNil())
	g.Expect(policy.Object["spec"]).To(Equal(map[string]any{"deletionPolicy": "Delete", "allowHTTPEndpoint": true,
		"credentialBroker": broker, "inspection": map[string]any{"maxNamespacesGone": int64(2)}, "retention": map[string]any{"maxKeepLast": int64(30)}}))

	noClass := map[string]any{"defaultStrategy": map[string]any{"enabled": true,
		"s3": map[string]any{"bucket": "b", "endpoint": "https://s3.example.com"}, "backupClass": map[string]any{"enabled": false}}}
	objs = renderDriver(t, noClass)
	g.Expect(Find(objs, "Etcd", "etcd-default")).NotTo(BeNil())
	g.Expect(Find(objs, "BackupClass", "etcd-default")).To(BeNil())

	_, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS,
		Values: map[string]any{"defaultStrategy": map[string]any{"enabled": true}}})
	g.Expect(err).To(MatchError(ContainSubstring("defaultStrategy.enabled needs defaultStrategy.s3.bucket and defaultStrategy.s3.endpoint")))
}

// A pinned digest pins the manager's image and, through it, the staging
// Job's; an explicit stagingImage still wins.
func TestImageDigestPinsTheManagerAndTheStagingImage(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("ab", 32)
	c := managerContainer(g, renderDriver(t, map[string]any{"image": map[string]any{"digest": digest}}))
	pinned := "ghcr.io/etcd-backup-driver/etcd-backup-driver:0.1.0@" + digest
	g.Expect(c["image"]).To(Equal(pinned))
	g.Expect(c["args"]).To(ContainElement("--staging-image=" + pinned))

	c = managerContainer(g, renderDriver(t, map[string]any{"image": map[string]any{"digest": digest}, "stagingImage": "mirror.example/ebd:1"}))
	g.Expect(c["args"]).To(ContainElement("--staging-image=mirror.example/ebd:1"))

	_, err := Render(ChartDir("etcd-backup-driver"), Release{Name: "etcd-backup-driver", Namespace: driverNS,
		Values: map[string]any{"image": map[string]any{"digest": "latest"}}})
	g.Expect(err).To(MatchError(ContainSubstring("digest")), "a digest is a sha256")
}
