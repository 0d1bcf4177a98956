package chartrender

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const ns = "tenant-a"

func renderEtcd(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(ChartDir("etcd"), Release{Name: "etcd", Namespace: ns, Values: values})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

func field(g *WithT, obj *unstructured.Unstructured, path ...string) any {
	g.Expect(obj).NotTo(BeNil())
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue(), "%s has no %v", obj.GetKind(), path)
	return v
}

func defaultAffinity() map[string]any {
	return map[string]any{"podAntiAffinity": map[string]any{
		"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
			"weight": int64(100),
			"podAffinityTerm": map[string]any{
				"topologyKey":   "kubernetes.io/hostname",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "etcd"}},
			},
		}},
	}}
}

// The defaults are the seed's parameter table.
func TestEtcdDefaults(t *testing.T) {
	g := NewWithT(t)
	cluster := Find(renderEtcd(t, nil), "EtcdCluster", "etcd")
	g.Expect(cluster).NotTo(BeNil())
	g.Expect(cluster.GetAPIVersion()).To(Equal("etcd-operator.cozystack.io/v1alpha2"))
	spec := cluster.Object["spec"].(map[string]any)
	g.Expect(spec["version"]).To(Equal("3.6.11"))
	g.Expect(spec["replicas"]).To(BeEquivalentTo(3))
	g.Expect(spec["storage"]).To(Equal(map[string]any{"size": "4Gi"}), "empty storageClass means the cluster default")
	g.Expect(spec["resources"]).To(Equal(map[string]any{
		"requests": map[string]any{"cpu": "1000m", "memory": "512Mi"},
		"limits":   map[string]any{"memory": "512Mi"},
	}))
	g.Expect(spec["affinity"]).To(Equal(defaultAffinity()))
	// The operator's typed options (it prunes any other key): 95% of 4Gi,
	// as the platform's chart computes it, periodic compaction every five
	// minutes, and the raft snapshot count.
	g.Expect(spec["options"]).To(Equal(map[string]any{
		"quotaBackendBytes":       int64(4080218931),
		"autoCompactionMode":      "periodic",
		"autoCompactionRetention": "5m",
		"snapshotCount":           int64(10000),
	}))
	g.Expect(spec["additionalMetadata"]).To(Equal(map[string]any{"labels": map[string]any{"cozystack.io/service": "etcd"}}))
	g.Expect(spec).NotTo(HaveKey("bootstrap"))
	g.Expect(spec).NotTo(HaveKey("progressDeadlineSeconds"), "the operator's default")
	g.Expect(cluster.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", "etcd"))
}

// Each value changes what it should, and only that.
func TestEtcdValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		path   []string
		want   any
	}{
		{"version", map[string]any{"version": "3.5.21"}, []string{"spec", "version"}, "3.5.21"},
		{"replicas", map[string]any{"replicas": 5}, []string{"spec", "replicas"}, int64(5)},
		{"size", map[string]any{"size": "10Gi"}, []string{"spec", "storage", "size"}, "10Gi"},
		{"quota follows size", map[string]any{"size": "2Gi"}, []string{"spec", "options", "quotaBackendBytes"}, int64(2040109466)},
		{"quota rounds to the nearest byte", map[string]any{"size": "1Mi"}, []string{"spec", "options", "quotaBackendBytes"}, int64(996147)},
		{"quota in decimal units", map[string]any{"size": "4G"}, []string{"spec", "options", "quotaBackendBytes"}, int64(3800000000)},
		{"quota of a large volume", map[string]any{"size": "100Gi"}, []string{"spec", "options", "quotaBackendBytes"}, int64(102005473280)},
		{"quota of a huge volume does not overflow", map[string]any{"size": "100Pi"}, []string{"spec", "options", "quotaBackendBytes"}, int64(106960491150049280)},
		{"storageClass", map[string]any{"storageClass": "replicated"}, []string{"spec", "storage", "storageClassName"}, "replicated"},
		{"cpu", map[string]any{"resources": map[string]any{"cpu": "2"}}, []string{"spec", "resources", "requests", "cpu"}, "2"},
		{"memory request", map[string]any{"resources": map[string]any{"memory": "2Gi"}}, []string{"spec", "resources", "requests", "memory"}, "2Gi"},
		{"memory limit", map[string]any{"resources": map[string]any{"memory": "2Gi"}}, []string{"spec", "resources", "limits", "memory"}, "2Gi"},
		{
			"affinity replaces the default verbatim",
			map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "role", "operator": "In", "values": []any{"etcd"}}}}},
			}}}},
			[]string{"spec", "affinity"},
			map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "role", "operator": "In", "values": []any{"etcd"}}}}},
			}}},
		},
		{"empty affinity keeps the soft default", map[string]any{"affinity": map[string]any{}}, []string{"spec", "affinity"}, defaultAffinity()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cluster := Find(renderEtcd(t, tc.values), "EtcdCluster", "etcd")
			g.Expect(field(g, cluster, tc.path...)).To(Equal(tc.want))
			// Values never disturb the TLS shape.
			g.Expect(field(g, cluster, "spec", "tls", "client", "serverSecretRef", "name")).To(Equal("etcd-server-tls"))
		})
	}
}

func TestEtcdTLSSecretRefs(t *testing.T) {
	g := NewWithT(t)
	objs := renderEtcd(t, nil)
	cluster := Find(objs, "EtcdCluster", "etcd")
	g.Expect(field(g, cluster, "spec", "tls")).To(Equal(map[string]any{
		"client": map[string]any{
			"serverSecretRef":         map[string]any{"name": "etcd-server-tls"},
			"operatorClientSecretRef": map[string]any{"name": "etcd-client-tls"},
		},
		"peer": map[string]any{"secretRef": map[string]any{"name": "etcd-peer-tls"}},
	}))

	// Every Secret the cluster references is produced by a Certificate
	// from the right CA issuer.
	issuerOf := map[string]string{}
	secretOf := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "Certificate" {
			secret := field(g, o, "spec", "secretName").(string)
			secretOf[secret] = o
			issuerOf[secret] = field(g, o, "spec", "issuerRef", "name").(string)
		}
	}
	g.Expect(issuerOf).To(Equal(map[string]string{
		"etcd-ca-tls":      "etcd-selfsigned-issuer",
		"etcd-peer-ca-tls": "etcd-selfsigned-issuer",
		"etcd-server-tls":  "etcd-issuer",
		"etcd-client-tls":  "etcd-issuer",
		"etcd-peer-tls":    "etcd-peer-issuer",
	}))
	g.Expect(field(g, secretOf["etcd-ca-tls"], "spec", "isCA")).To(BeTrue())
	g.Expect(field(g, secretOf["etcd-peer-ca-tls"], "spec", "isCA")).To(BeTrue())
	// The operator and the consumers share the root client certificate, the
	// shape of the clusters the platform runs (spec.tls is immutable).
	g.Expect(field(g, secretOf["etcd-client-tls"], "spec", "commonName")).To(Equal("root"))
	g.Expect(field(g, secretOf["etcd-client-tls"], "spec", "usages")).To(ContainElement("client auth"))

	g.Expect(field(g, Find(objs, "Issuer", "etcd-issuer"), "spec", "ca", "secretName")).To(Equal("etcd-ca-tls"))
	g.Expect(field(g, Find(objs, "Issuer", "etcd-peer-issuer"), "spec", "ca", "secretName")).To(Equal("etcd-peer-ca-tls"))
	g.Expect(Find(objs, "Issuer", "etcd-selfsigned-issuer")).NotTo(BeNil())

	// The server and peer certificates cover the client Service (what the
	// DataStore, the operator and the agents dial) and each member.
	for _, secret := range []string{"etcd-server-tls", "etcd-peer-tls"} {
		names := field(g, secretOf[secret], "spec", "dnsNames")
		g.Expect(names).To(ContainElements(
			"etcd-client."+ns+".svc", "etcd-client."+ns+".svc.cluster.local", "etcd-client",
			"*.etcd."+ns+".svc", "*.etcd-headless."+ns+".svc", "localhost",
		), secret)
		g.Expect(field(g, secretOf[secret], "spec", "usages")).To(ContainElements("server auth", "client auth"), secret)
	}
}

func TestEtcdDataStore(t *testing.T) {
	g := NewWithT(t)
	ds := Find(renderEtcd(t, nil), "DataStore", ns)
	g.Expect(ds).NotTo(BeNil(), "the DataStore is named after the namespace")
	g.Expect(ds.GetAPIVersion()).To(Equal("kamaji.clastix.io/v1alpha1"))
	g.Expect(ds.GetNamespace()).To(BeEmpty(), "DataStores are cluster-scoped")
	g.Expect(field(g, ds, "spec", "driver")).To(Equal("etcd"))
	g.Expect(field(g, ds, "spec", "endpoints")).To(Equal([]any{"etcd-client." + ns + ".svc:2379"}))
	ref := func(name, key string) map[string]any {
		return map[string]any{"secretReference": map[string]any{"name": name, "namespace": ns, "keyPath": key}}
	}
	g.Expect(field(g, ds, "spec", "tlsConfig")).To(Equal(map[string]any{
		"certificateAuthority": map[string]any{"certificate": ref("etcd-ca-tls", "tls.crt"), "privateKey": ref("etcd-ca-tls", "tls.key")},
		"clientCertificate":    map[string]any{"certificate": ref("etcd-client-tls", "tls.crt"), "privateKey": ref("etcd-client-tls", "tls.key")},
	}))
}

// What the chart renders, complete: nothing unexpected slips in.
func TestEtcdRendersExactlyTheseObjects(t *testing.T) {
	g := NewWithT(t)
	var got []string
	for _, o := range renderEtcd(t, nil) {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	g.Expect(got).To(ConsistOf(
		"EtcdCluster/etcd", "DataStore/"+ns,
		"Issuer/etcd-selfsigned-issuer", "Issuer/etcd-issuer", "Issuer/etcd-peer-issuer",
		"Certificate/etcd-ca", "Certificate/etcd-peer-ca", "Certificate/etcd-server", "Certificate/etcd-peer",
		"Certificate/etcd-client",
	))
}

func TestEtcdRenderFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release string
		values  map[string]any
		errs    []string
	}{
		{name: "wrong release name", release: "my-etcd", errs: []string{`the release must be named "etcd", got "my-etcd"`}},
		{
			name: "legacy backup values", release: "etcd",
			values: map[string]any{"backup": map[string]any{
				"enabled": true, "schedule": "0 2 * * *", "destinationPath": "s3://b/p", "endpointURL": "https://s3",
				"s3AccessKey": "AK", "s3SecretKey": "SK",
			}},
			errs: []string{"backup.enabled=true is no longer supported", "BackupClass and a Plan", "Etcd strategy",
				"ebdctl migrate-legacy-values -f values.yaml --namespace " + ns},
		},
		{name: "replicas as a string", release: "etcd", values: map[string]any{"replicas": "3"}, errs: []string{"/replicas", "want integer"}},
		{name: "zero replicas", release: "etcd", values: map[string]any{"replicas": 0}, errs: []string{"/replicas"}},
		{name: "size not a quantity", release: "etcd", values: map[string]any{"size": "four gigs"}, errs: []string{"/size"}},
		{name: "fractional size", release: "etcd", values: map[string]any{"size": "1.5Gi"}, errs: []string{"/size"}},
		{name: "version not X.Y.Z", release: "etcd", values: map[string]any{"version": "latest"}, errs: []string{"/version"}},
		{name: "storageClass not a string", release: "etcd", values: map[string]any{"storageClass": 1}, errs: []string{"/storageClass"}},
		{name: "cpu not a quantity", release: "etcd", values: map[string]any{"resources": map[string]any{"cpu": "lots"}}, errs: []string{"/resources/cpu"}},
		{name: "unknown resources field", release: "etcd", values: map[string]any{"resources": map[string]any{"gpu": 1}}, errs: []string{"gpu"}},
		{name: "affinity not an object", release: "etcd", values: map[string]any{"affinity": "soft"}, errs: []string{"/affinity"}},
		{name: "typo in a value name", release: "etcd", values: map[string]any{"replica": 3}, errs: []string{"'replica' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := Render(ChartDir("etcd"), Release{Name: tc.release, Namespace: ns, Values: tc.values})
			g.Expect(objs).To(BeNil())
			for _, want := range tc.errs {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
			// Credentials given in values never reach the message.
			g.Expect(err.Error()).NotTo(ContainSubstring("SK"))
		})
	}
}

func TestEtcdAcceptsPlatformValues(t *testing.T) {
	g := NewWithT(t)
	// Cozystack injects _cluster and _namespace into every app's values;
	// a disabled legacy block is ignored.
	objs := renderEtcd(t, map[string]any{
		"_cluster": map[string]any{"root-host": "example.org"}, "_namespace": map[string]any{"etcd": "tenant-a"},
		"backup": map[string]any{"enabled": false},
	})
	g.Expect(Find(objs, "EtcdCluster", "etcd")).NotTo(BeNil())
}
