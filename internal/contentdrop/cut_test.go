package contentdrop

import (
	"fmt"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
)

// controlPlane adds the keys of one Kubernetes keyspace to c: four
// namespaces, and per resource `each` objects in each of them, under
// resource names as long as Cluster API's, so the report has to cut its
// lists to fit.
func controlPlane(c *manifest.Counter, prefix string, resources, each int) {
	for n := range 4 {
		c.Add(fmt.Appendf(nil, "%s/namespaces/ns-%d", prefix, n))
	}
	for r := range resources {
		for n := range 4 {
			for i := range each {
				c.Add(fmt.Appendf(nil, "%s/infrastructure.cluster.x-k8s.io/kubevirtmachinetemplates-%02d/ns-%d/w%d", prefix, r, n, i))
			}
		}
	}
}

// inspected is the manifest the driver reads from an inspection Pod's
// termination message: the Counter's, through the 4,000-byte report.
func inspected(t *testing.T, c *manifest.Counter) *driverv1alpha1.BackupManifest {
	t.Helper()
	ks, cut := c.Keyspaces()
	rep := inspectionstep.NewReport(driverv1alpha1.BackupManifest{Revision: 100, Keys: c.Keys(), DBSizeBytes: 1 << 20, Keyspaces: ks, Truncated: cut}, nil)
	got, err := inspectionstep.ParseReport(rep.Line())
	if err != nil {
		t.Fatal(err)
	}
	return got.Manifest
}

// A tenant that adds a second Kamaji control plane loses nothing: the
// report, cut to fit, no longer lists some of the first keyspace's
// resources, and those are not known to be gone (issue 37, item 6; seen
// failing before manifest.Compare: "kubevirtmachinetemplates-20 in
// /tenant-a_cp1: 8 → 0" and two more).
func TestASecondControlPlaneIsNoDrop(t *testing.T) {
	before := manifest.NewCounter()
	controlPlane(before, "/tenant-a_cp1", 23, 2)
	prev := inspected(t, before)
	if prev.Truncated || len(prev.Keyspaces[0].Resources) != 24 {
		t.Fatalf("the first manifest should be whole: truncated %v, %d resources", prev.Truncated, len(prev.Keyspaces[0].Resources))
	}
	after := manifest.NewCounter()
	controlPlane(after, "/tenant-a_cp1", 23, 2)
	controlPlane(after, "/tenant-a_cp2", 23, 3)
	cur := inspected(t, after)
	if !cur.Truncated {
		t.Fatal("the second manifest should have been cut to fit the report")
	}
	if drops := Compare(prev, cur, ThresholdsOf(strategypolicy.Effective("", nil).Inspection)); len(drops) != 0 {
		t.Fatalf("a resource cut from the report was read as dropped: %v", Message(drops, "prev"))
	}

	// What a cut manifest lists still counts: the first control plane's
	// resources losing two thirds of their objects is a drop, of the
	// resources both reports list.
	full, emptied := manifest.NewCounter(), manifest.NewCounter()
	controlPlane(full, "/tenant-a_cp1", 23, 3)
	controlPlane(full, "/tenant-a_cp2", 23, 3)
	controlPlane(emptied, "/tenant-a_cp1", 23, 1)
	controlPlane(emptied, "/tenant-a_cp2", 23, 3)
	drops := Compare(inspected(t, full), inspected(t, emptied), ThresholdsOf(strategypolicy.Effective("", nil).Inspection))
	if len(drops) == 0 {
		t.Fatal("resources that lost two thirds of their objects were not read as dropped")
	}
	for _, d := range drops {
		if d.Keyspace != "/tenant-a_cp1" || d.Before != 12 || d.After != 4 {
			t.Fatalf("drop %s, want only 12 → 4 in /tenant-a_cp1", d)
		}
	}
}

// A keyspace pushed out of the manifest's four by a fifth is unknown, not
// gone; one that is gone from a manifest whose keyspaces hold every key is
// a drop even when the manifest was cut elsewhere.
func TestAKeyspaceCutFromTheListIsNoDrop(t *testing.T) {
	four, five, three := manifest.NewCounter(), manifest.NewCounter(), manifest.NewCounter()
	for i := range 5 {
		for _, c := range []*manifest.Counter{four, five, three} {
			if (c == four && i == 4) || (c == three && i >= 3) {
				continue
			}
			controlPlane(c, fmt.Sprintf("/tenant-a_cp%d", i), 2, 1+i)
		}
	}
	prev, pushed := inspected(t, four), inspected(t, five)
	if len(prev.Keyspaces) != 4 || prev.Truncated || !pushed.Truncated {
		t.Fatalf("setup: %d keyspaces, truncated %v and %v", len(prev.Keyspaces), prev.Truncated, pushed.Truncated)
	}
	if drops := Compare(prev, pushed, ThresholdsOf(strategypolicy.Effective("", nil).Inspection)); len(drops) != 0 {
		t.Fatalf("a keyspace cut from the list was read as dropped: %v", Message(drops, "prev"))
	}
	gone := inspected(t, three)
	gone.Truncated = true // cut elsewhere; its keyspaces still hold every key
	drops := Compare(prev, gone, ThresholdsOf(strategypolicy.Effective("", nil).Inspection))
	if len(drops) != 1 || !drops[0].KeyspaceGone || drops[0].Keyspace != "/tenant-a_cp3" {
		t.Fatalf("a keyspace gone was not read as dropped: %v", drops)
	}
}
