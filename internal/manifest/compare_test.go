package manifest

import (
	"fmt"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

func oc(name string, n int64) driverv1alpha1.ObjectCount {
	return driverv1alpha1.ObjectCount{Name: name, Count: n}
}

// count renders a count, "?" when unknown.
func count(n *int64) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

// The one rule: what a list does not hold is zero only when the list is
// whole, by the manifest's Truncated flag or by its own counts; otherwise
// it is unknown.
func TestAMissingEntryIsZeroOnlyInAWholeList(t *testing.T) {
	prev := &driverv1alpha1.BackupManifest{Keys: 40, Keyspaces: []driverv1alpha1.KeyspaceManifest{
		{Prefix: "/registry", Objects: 30, Namespaces: 2, NamespaceNames: []string{"a", "b"}, Resources: []driverv1alpha1.ObjectCount{oc("pods", 20), oc("secrets", 8), oc("namespaces", 2)}},
		{Prefix: "/t_cp", Objects: 10, Namespaces: 1, NamespaceNames: []string{"a"}, Resources: []driverv1alpha1.ObjectCount{oc("pods", 9), oc("namespaces", 1)}},
	}}
	for _, tc := range []struct {
		name        string
		cur         *driverv1alpha1.BackupManifest
		secrets, cp string // secrets in /registry now, objects of /t_cp now
	}{
		{"nothing cut: absent is zero", &driverv1alpha1.BackupManifest{Keys: 22, Keyspaces: []driverv1alpha1.KeyspaceManifest{
			{Prefix: "/registry", Objects: 22, Namespaces: 2, NamespaceNames: []string{"a", "b"}, Resources: []driverv1alpha1.ObjectCount{oc("pods", 20), oc("namespaces", 2)}},
		}}, "0", "0"},
		{"cut: absent is unknown", &driverv1alpha1.BackupManifest{Truncated: true, Keys: 40, Keyspaces: []driverv1alpha1.KeyspaceManifest{
			{Prefix: "/registry", Objects: 30, Namespaces: 2, Resources: []driverv1alpha1.ObjectCount{oc("pods", 20), oc("namespaces", 2)}},
		}}, "?", "?"},
		{"cut elsewhere: counts that add up prove absence", &driverv1alpha1.BackupManifest{Truncated: true, Keys: 22, Keyspaces: []driverv1alpha1.KeyspaceManifest{
			{Prefix: "/registry", Objects: 22, Namespaces: 2, Resources: []driverv1alpha1.ObjectCount{oc("pods", 20), oc("namespaces", 2)}},
		}}, "0", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(prev, tc.cur)
			if len(d) != 2 || d[0].Prefix != "/registry" || d[1].Prefix != "/t_cp" {
				t.Fatalf("keyspaces %+v", d)
			}
			var secrets *int64
			for _, r := range d[0].Resources {
				if r.Name == "secrets" {
					secrets = r.To
				}
			}
			if got := count(secrets); got != tc.secrets {
				t.Errorf("secrets now %s, want %s", got, tc.secrets)
			}
			if got := count(d[1].ObjectsTo); got != tc.cp {
				t.Errorf("/t_cp's objects now %s, want %s", got, tc.cp)
			}
			if d[1].InTo || !d[1].InFrom {
				t.Errorf("/t_cp listed: from %v, to %v", d[1].InFrom, d[1].InTo)
			}
		})
	}
}

// Namespace names are compared only when both sides name them all; the
// names keep their manifest's order.
func TestNamespaceNamesAreComparedOnlyWhenWhole(t *testing.T) {
	ks := func(names ...string) *driverv1alpha1.BackupManifest {
		return &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Namespaces: int64(len(names)), NamespaceNames: names}}}
	}
	d := Compare(ks("shop", "billing", "default"), ks("default", "api"))[0]
	if d.NamespaceNamesUnknown || fmt.Sprint(d.NamespacesOnlyInFrom, d.NamespacesOnlyInTo) != "[shop billing] [api]" {
		t.Fatalf("%+v", d)
	}
	many := ks()
	many.Keyspaces[0].Namespaces = 40
	if d := Compare(ks("a"), many)[0]; !d.NamespaceNamesUnknown || d.NamespacesOnlyInFrom != nil {
		t.Fatalf("compared with names that are not all listed: %+v", d)
	}
}

// Totals sum each resource over the keyspaces; one keyspace that cannot
// say makes the total unknown, and a side whose keyspace list was cut
// knows no total.
func TestTotalsAreKnownOnlyWhenEveryKeyspaceIs(t *testing.T) {
	two := &driverv1alpha1.BackupManifest{Keys: 20, Keyspaces: []driverv1alpha1.KeyspaceManifest{
		{Prefix: "/a", Objects: 10, Namespaces: 1, NamespaceNames: []string{"x"}, Resources: []driverv1alpha1.ObjectCount{oc("pods", 9), oc("namespaces", 1)}},
		{Prefix: "/b", Objects: 10, Namespaces: 1, NamespaceNames: []string{"y"}, Resources: []driverv1alpha1.ObjectCount{oc("pods", 4), oc("leases", 5), oc("namespaces", 1)}},
	}}
	cut := two.DeepCopy()
	cut.Truncated = true
	cut.Keyspaces[1].Resources = cut.Keyspaces[1].Resources[:1] // leases and namespaces cut
	totals := func(t Totals) string {
		s := ""
		for _, c := range t.Resources {
			s += fmt.Sprintf("%s %s→%s; ", c.Name, count(c.From), count(c.To))
		}
		return s + fmt.Sprint(t.NamespacesOnlyInFrom, t.NamespacesOnlyInTo, t.NamespaceNamesUnknown)
	}
	if got := totals(CompareTotals(two, cut)); got != "pods 13→13; leases 5→?; namespaces 2→?; [] [] false" {
		t.Fatalf("totals %s", got)
	}
	one := &driverv1alpha1.BackupManifest{Truncated: true, Keys: 20, Keyspaces: two.Keyspaces[:1]}
	if got := totals(CompareTotals(one, two)); got != "leases ?→5; namespaces ?→2; pods ?→13; [] [] true" {
		t.Fatalf("totals with a cut list of keyspaces %s", got)
	}
}
