package contentdrop

import (
	"strings"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

func ks(prefix string, ns []string, res ...driverv1alpha1.ObjectCount) driverv1alpha1.KeyspaceManifest {
	k := driverv1alpha1.KeyspaceManifest{Prefix: prefix, Namespaces: int64(len(ns)), NamespaceNames: ns, Resources: res}
	for _, r := range res {
		k.Objects += r.Count
	}
	return k
}

func oc(name string, n int64) driverv1alpha1.ObjectCount {
	return driverv1alpha1.ObjectCount{Name: name, Count: n}
}

func TestCompare(t *testing.T) {
	base := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
		ks("/registry", []string{"a", "b", "default"}, oc("pods", 40), oc("configmaps", 20), oc("secrets", 4)),
		ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
	}}
	def := ThresholdsOf(strategypolicy.Effective("", nil).Inspection)
	for _, tc := range []struct {
		name string
		cur  *driverv1alpha1.BackupManifest
		th   Thresholds
		want []string // substrings, in order
	}{
		{name: "unchanged", cur: base},
		{name: "a small shrink is no drop", cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"a", "b", "default"}, oc("pods", 21), oc("configmaps", 20), oc("secrets", 4)),
			ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
		}}},
		{name: "more than half the pods gone", cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"a", "b", "default"}, oc("pods", 19), oc("configmaps", 20), oc("secrets", 4)),
			ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
		}}, want: []string{"pods in /registry: 40 → 19"}},
		{name: "a small resource emptied is under the minimum", cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"a", "b", "default"}, oc("pods", 40), oc("configmaps", 20)),
			ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
		}}},
		{name: "namespaces deleted", cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"default"}, oc("pods", 2), oc("configmaps", 2)),
			ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
		}}, want: []string{"pods in /registry: 40 → 2", "configmaps in /registry: 20 → 2", "namespaces gone from /registry: a, b"}},
		{name: "one namespace tolerated", th: Thresholds{50, 5, 1, nil}, cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"b", "default"}, oc("pods", 40), oc("configmaps", 20), oc("secrets", 4)),
			ks("/tenant_cp", []string{"default"}, oc("pods", 10)),
		}}},
		{name: "a control plane's keyspace gone", cur: &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
			ks("/registry", []string{"a", "b", "default"}, oc("pods", 40), oc("configmaps", 20), oc("secrets", 4)),
		}}, want: []string{"keyspace /tenant_cp gone (10 objects)"}},
		{name: "everything gone", cur: &driverv1alpha1.BackupManifest{}, want: []string{"keyspace /registry gone (64 objects)", "keyspace /tenant_cp gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := tc.th
			if th.MinDroppedObjects == 0 {
				th = def
			}
			drops := Compare(base, tc.cur, th)
			if len(drops) != len(tc.want) {
				t.Fatalf("drops %v, want %d: %v", drops, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(drops[i].String(), w) {
					t.Errorf("drop %d is %q, want %q", i, drops[i], w)
				}
			}
		})
	}
}

func TestTruncatedListsAreNotReadAsDrops(t *testing.T) {
	prev := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{ks("/registry", nil, oc("widgets", 30))}}
	res := make([]driverv1alpha1.ObjectCount, driverv1alpha1.ManifestMaxResources)
	for i := range res {
		res[i] = oc(strings.Repeat("r", i+1), 100)
	}
	cur := &driverv1alpha1.BackupManifest{Truncated: true, Keyspaces: []driverv1alpha1.KeyspaceManifest{ks("/registry", nil, res...)}}
	// The keyspace still holds its 30 widgets; its list no longer names
	// them (a cut list's counts add up to less than its objects).
	cur.Keyspaces[0].Objects += 30
	if drops := Compare(prev, cur, ThresholdsOf(strategypolicy.Effective("", nil).Inspection)); len(drops) != 0 {
		t.Fatalf("a resource cut from a full list was read as dropped: %v", drops)
	}
	cur.Truncated = false
	if drops := Compare(prev, cur, ThresholdsOf(strategypolicy.Effective("", nil).Inspection)); len(drops) != 1 {
		t.Fatalf("a resource missing from a complete list is a drop; got %v", drops)
	}
}

func TestMessageIsBounded(t *testing.T) {
	var drops []Drop
	for i := 0; i < 500; i++ {
		drops = append(drops, Drop{Keyspace: "/registry", Resource: strings.Repeat("x", 60), Before: 100, After: 1})
	}
	if m := Message(drops, "b1"); len(m) > 1100 || !strings.HasPrefix(m, "since Backup b1: ") {
		t.Fatalf("message %d bytes: %.80q", len(m), m)
	}
}
