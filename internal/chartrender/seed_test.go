package chartrender

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartdoc"
)

// Every row of the chart reference's parameter table (the copy in
// charts/etcd/testdata) is what the chart renders by default: each default
// lands on the EtcdCluster field the parameter names.
func TestEtcdDefaultsAreTheSeedTable(t *testing.T) {
	g := NewWithT(t)
	seed, err := os.ReadFile(filepath.Join(ChartDir("etcd"), "testdata", "seed-parameters.md"))
	g.Expect(err).NotTo(HaveOccurred())
	rows := chartdoc.ParseTableRows(string(seed))
	g.Expect(rows).To(HaveLen(8))

	spec := Find(renderEtcd(t, nil), "EtcdCluster", "etcd").Object["spec"].(map[string]any)
	storage := spec["storage"].(map[string]any)
	requests := spec["resources"].(map[string]any)["requests"].(map[string]any)
	// What each seed default becomes on the rendered EtcdCluster.
	rendered := map[string]func() any{
		"version": func() any { return spec["version"] },
		"size":    func() any { return storage["size"] },
		"storageClass": func() any {
			if _, set := storage["storageClassName"]; set {
				return storage["storageClassName"]
			}
			return `""` // unset: the cluster's default StorageClass
		},
		"replicas":         func() any { return fmt.Sprint(spec["replicas"]) },
		"resources":        func() any { return "{}" }, // an object row; its fields are rows of their own
		"resources.cpu":    func() any { return requests["cpu"] },
		"resources.memory": func() any { return requests["memory"] },
		"affinity": func() any {
			if fmt.Sprint(spec["affinity"]) == fmt.Sprint(defaultAffinity()) {
				return "{}" // empty value: the chart's soft default
			}
			return spec["affinity"]
		},
	}
	for _, row := range rows {
		get, ok := rendered[row.Name]
		g.Expect(ok).To(BeTrue(), "seed parameter %q has no rendering check", row.Name)
		g.Expect(get()).To(Equal(row.Value), row.Name)
	}
}
