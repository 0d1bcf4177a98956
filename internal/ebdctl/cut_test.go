package ebdctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

// counted is the manifest of a snapshot holding one Kubernetes keyspace
// per prefix, the nth with n+1 pods in each of two namespaces.
func counted(prefixes ...string) *driverv1alpha1.BackupManifest {
	c := manifest.NewCounter()
	for n, p := range prefixes {
		for _, ns := range []string{"a", "b"} {
			c.Add([]byte(p + "/namespaces/" + ns))
			for i := range n + 1 {
				c.Add(fmt.Appendf(nil, "%s/pods/%s/p%d", p, ns, i))
			}
		}
	}
	ks, cut := c.Keyspaces()
	return &driverv1alpha1.BackupManifest{Revision: 10, Keys: c.Keys(), DBSizeBytes: 1 << 20, Keyspaces: ks, Truncated: cut}
}

// A fifth control plane pushes the smallest keyspace out of the
// manifest's four: its counts in the newer Backup are unknown, not zero.
func TestDiffOfAKeyspaceCutFromTheList(t *testing.T) {
	g := NewWithT(t)
	a := counted("/t_cp1", "/t_cp2", "/t_cp3", "/t_cp4")
	b := counted("/t_cp1", "/t_cp2", "/t_cp3", "/t_cp4", "/t_cp5")
	g.Expect(b.Truncated).To(BeTrue())
	res := diffManifests("ns", "a", "b", a, b)
	var out bytes.Buffer
	g.Expect(printDiff(&out, res)).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("Keyspace /t_cp1: objects 4 → 0"), "a keyspace cut from the list read as emptied")
	raw, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	var generic struct {
		Keyspaces []struct {
			Prefix    string
			ObjectsTo *int64
			Resources []struct{ To *int64 }
		}
	}
	g.Expect(json.Unmarshal(raw, &generic)).To(Succeed())
	for _, k := range generic.Keyspaces {
		if k.Prefix != "/t_cp1" {
			continue
		}
		g.Expect(k.ObjectsTo).To(BeNil(), "objects of a keyspace cut from the list")
		for _, r := range k.Resources {
			g.Expect(r.To).To(BeNil(), "a resource of a keyspace cut from the list")
		}
	}
}
