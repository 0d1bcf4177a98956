package rehearsal

import (
	"fmt"
	"strings"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

func keyspace(names []string, counts map[string]int64) driverv1alpha1.KeyspaceManifest {
	k := driverv1alpha1.KeyspaceManifest{Prefix: "/registry", Namespaces: int64(len(names)), NamespaceNames: names}
	for n, c := range counts {
		k.Resources = append(k.Resources, driverv1alpha1.ObjectCount{Name: n, Count: c})
	}
	return k
}

// compare lists changed counts largest first, and never reads a count
// missing from a cut list (or a namespace list that is not whole) as
// zero: it leaves it out and says the report is truncated.
func TestCompareNeverTakesACutListForZero(t *testing.T) {
	now := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{keyspace([]string{"a", "x"}, map[string]int64{"pods": 5, "secrets": 2, "configmaps": 1})}}
	after := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{keyspace([]string{"a", "b"}, map[string]int64{"pods": 9, "secrets": 2, "leases": 1})}}
	var rep driverv1alpha1.RehearsalReport
	compare(&rep, now, after)
	want := []driverv1alpha1.CountChange{{Name: "pods", Before: 5, After: 9}, {Name: "configmaps", Before: 1, After: 0}, {Name: "leases", Before: 0, After: 1}}
	if fmt.Sprint(rep.Resources) != fmt.Sprint(want) || rep.Truncated {
		t.Fatalf("resources %v truncated %v; want %v", rep.Resources, rep.Truncated, want)
	}
	if fmt.Sprint(rep.NamespacesReturning, rep.NamespacesVanishing) != "[b] [x]" {
		t.Fatalf("returning %v vanishing %v", rep.NamespacesReturning, rep.NamespacesVanishing)
	}

	// The live list is at its bound, cut by the Counter: "leases",
	// missing from it, may be among the cut entries.
	full := map[string]int64{"pods": 5}
	for i := range driverv1alpha1.ManifestMaxResources - 1 {
		full[fmt.Sprintf("r%02d", i)] = 1
	}
	now = &driverv1alpha1.BackupManifest{Truncated: true, Keyspaces: []driverv1alpha1.KeyspaceManifest{keyspace(nil, full)}}
	now.Keyspaces[0].Namespaces = 40 // too many to list
	rep = driverv1alpha1.RehearsalReport{}
	compare(&rep, now, after)
	if changeOf(&rep, "leases") != nil || !rep.Truncated || changeOf(&rep, "pods") == nil {
		t.Fatalf("with a cut list: %+v", rep)
	}
	if rep.NamespacesReturning != nil || rep.NamespacesVanishing != nil {
		t.Fatalf("namespaces compared with a list that is not whole: %+v", rep)
	}
	if s := summary(rep, ""); !strings.Contains(s, "pods 5 → 9") || !strings.Contains(s, "lists cut") {
		t.Fatalf("summary %q", s)
	}
	// The live cluster unread: nothing compared, the message says why.
	rep = driverv1alpha1.RehearsalReport{RevisionAfter: 1000000042}
	compare(&rep, nil, after)
	if rep.Resources != nil || !strings.Contains(summary(rep, "it did not answer"), "could not be read (it did not answer)") {
		t.Fatalf("unread live cluster: %+v", rep)
	}
}
