package manifest

import (
	"errors"
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

// A Counter of NewBoundedCounter keeps at most its Limits, whatever the
// keys (issue 37, item 1: a tenant writes its live etcd): past the
// distinct prefixes or the entries it stops with ErrTooMany; a long name
// is cut as it is added, so it costs no more than ManifestMaxName; and
// distinct bytes that make the same kept name (invalid UTF-8) share one
// copy. Seen failing with the bounds taken out of Add (no error, 2,001
// keyspaces) and with the names kept by their bytes (a
// 67-byte copy kept).
func TestBoundedCounterKeepsItsLimits(t *testing.T) {
	c := NewBoundedCounter(Limits{Keyspaces: 16, Entries: 100})
	for i := range 2000 {
		c.Add([]byte(fmt.Sprintf("/%04d/x", i)))
	}
	if !errors.Is(c.Err(), ErrTooMany) || len(c.keyspaces) != 16 || c.Keys() != 2000 {
		t.Fatalf("distinct prefixes: %v, %d keyspaces kept, %d keys", c.Err(), len(c.keyspaces), c.Keys())
	}

	c = NewBoundedCounter(Limits{Keyspaces: 16, Entries: 100})
	c.Add([]byte("/registry/namespaces/a"))
	for i := range 2000 {
		c.Add([]byte(fmt.Sprintf("/registry/res%04d/a/x", i)))
	}
	if !errors.Is(c.Err(), ErrTooMany) || c.entries != 100 || len(c.names) > 4*100+2 {
		t.Fatalf("distinct resources: %v, %d entries, %d names kept", c.Err(), c.entries, len(c.names))
	}

	c = NewBoundedCounter(Limits{Keyspaces: 16, Entries: 100})
	long := strings.Repeat("n", 64<<10)
	c.Add([]byte("/registry/namespaces/" + long))
	c.Add([]byte("/registry/pods/" + long + "/p"))
	for i := range 4096 {
		c.Add([]byte{'/', 'r', 'e', 'g', '/', 'p', 'o', 'd', 's', '/', 0x80 | byte(i&0x3f), 0x80 | byte(i>>6&0x3f), 0xff, '/', 'p'})
	}
	if c.Err() != nil {
		t.Fatalf("names that cut to the same kept names: %v", c.Err())
	}
	for name := range c.names {
		if len(name) > driverv1alpha1.ManifestMaxName {
			t.Fatalf("a name of %d bytes kept", len(name))
		}
	}
	if len(c.names) > 10 {
		t.Fatalf("%d names kept for 4 distinct kept names", len(c.names))
	}
	ks, truncated := c.Keyspaces()
	if !truncated || len(ks) != 1 || ks[0].NamespaceNames[0] != long[:driverv1alpha1.ManifestMaxName] || ks[0].Objects != 2 {
		t.Fatalf("cut names: truncated=%v %+v", truncated, ks)
	}
}
