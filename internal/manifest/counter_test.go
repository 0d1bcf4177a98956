package manifest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// TestCounterClassifies feeds keys in kube-apiserver's layout and checks
// each resource, namespace and keyspace count, including the namespaced
// forms with extra parts (services/specs), API groups, cluster-scoped
// objects, objects of a namespace that does not exist, and keys that are
// not Kubernetes at all.
func TestCounterClassifies(t *testing.T) {
	c := NewCounter()
	for _, k := range []string{
		"/registry/namespaces/default", "/registry/namespaces/a", "/registry/namespaces/b",
		"/registry/pods/a/p1", "/registry/pods/a/p2", "/registry/pods/b/p1",
		"/registry/services/specs/default/kubernetes", "/registry/services/endpoints/default/kubernetes",
		"/registry/example.com/widgets/a/w1", "/registry/example.com/clusterwidgets/cw1",
		"/registry/minions/node-1",
		"/registry/pods/gone/p1", // its namespace does not exist: not namespaced
		"/other/thing/x", "plain", "/lonely",
	} {
		c.Add([]byte(k))
	}
	if c.Keys() != 15 {
		t.Fatalf("Keys = %d, want 15", c.Keys())
	}
	ks, truncated := c.Keyspaces()
	if truncated {
		t.Fatalf("truncated with nothing to cut")
	}
	want := []driverv1alpha1.KeyspaceManifest{{
		Prefix: "/registry", Objects: 12, Namespaces: 3,
		Resources: []driverv1alpha1.ObjectCount{
			{Name: "pods", Count: 4}, {Name: "namespaces", Count: 3},
			{Name: "example.com/clusterwidgets", Count: 1}, {Name: "example.com/widgets", Count: 1},
			{Name: "minions", Count: 1}, {Name: "services/endpoints", Count: 1}, {Name: "services/specs", Count: 1},
		},
		TopNamespaces:  []driverv1alpha1.ObjectCount{{Name: "a", Count: 3}, {Name: "default", Count: 2}, {Name: "b", Count: 1}},
		NamespaceNames: []string{"a", "b", "default"},
	}}
	if !reflect.DeepEqual(ks, want) {
		t.Fatalf("Keyspaces =\n%+v\nwant\n%+v", ks, want)
	}
}

// TestCounterBounds checks the manifest's bounds: long names cut, lists cut
// to their largest entries, keyspaces cut, NamespaceNames left out when
// there are too many namespaces.
func TestCounterBounds(t *testing.T) {
	c := NewCounter()
	long := strings.Repeat("n", 100)
	for p := 0; p < driverv1alpha1.ManifestMaxKeyspaces+2; p++ {
		prefix := fmt.Sprintf("/t%d_cp", p)
		for i := 0; i <= 2*driverv1alpha1.ManifestMaxNamespaces+p; i++ {
			c.Add([]byte(fmt.Sprintf("%s/namespaces/ns-%d", prefix, i)))
			c.Add([]byte(fmt.Sprintf("%s/pods/ns-%d/x", prefix, i)))
		}
		for r := 0; r < driverv1alpha1.ManifestMaxResources+3; r++ {
			c.Add([]byte(fmt.Sprintf("%s/res%02d/ns-0/x", prefix, r)))
		}
		c.Add([]byte(prefix + "/namespaces/" + long))
	}
	ks, truncated := c.Keyspaces()
	if !truncated || len(ks) != driverv1alpha1.ManifestMaxKeyspaces {
		t.Fatalf("truncated=%v, %d keyspaces", truncated, len(ks))
	}
	if ks[0].Prefix != fmt.Sprintf("/t%d_cp", driverv1alpha1.ManifestMaxKeyspaces+1) {
		t.Fatalf("largest keyspace first: got %q", ks[0].Prefix)
	}
	for _, k := range ks {
		if len(k.Resources) != driverv1alpha1.ManifestMaxResources || len(k.TopNamespaces) != driverv1alpha1.ManifestMaxNamespaces {
			t.Fatalf("%s: %d resources, %d namespaces", k.Prefix, len(k.Resources), len(k.TopNamespaces))
		}
		if k.TopNamespaces[0].Name != "ns-0" || k.TopNamespaces[0].Count != int64(driverv1alpha1.ManifestMaxResources+3+1) {
			t.Fatalf("%s: top namespace %+v", k.Prefix, k.TopNamespaces[0])
		}
		if len(k.NamespaceNames) != 0 {
			t.Fatalf("%s: %d namespaces listed by name, more than %d exist", k.Prefix, len(k.NamespaceNames), 2*driverv1alpha1.ManifestMaxNamespaces)
		}
	}
	small := NewCounter()
	small.Add([]byte("/registry/namespaces/" + long))
	got, truncated := small.Keyspaces()
	if !truncated || got[0].NamespaceNames[0] != long[:driverv1alpha1.ManifestMaxName] {
		t.Fatalf("long name not cut: %v %+v", truncated, got)
	}
}
