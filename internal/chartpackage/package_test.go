package chartpackage

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
)

// A packaged chart carries the release's version and appVersion, and
// pulls the manager and the staging image by the pinned digest; the
// values' comments (its documentation) survive.
func TestPackagePinsVersionAndDigest(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("0f", 32)
	path, err := Package(chartrender.ChartDir("etcd-backup-driver"), Options{Version: "1.2.3", ImageDigest: digest, OutDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Base(path)).To(Equal("etcd-backup-driver-1.2.3.tgz"))

	ch, err := loader.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.Version).To(Equal("1.2.3"))
	g.Expect(ch.Metadata.AppVersion).To(Equal("1.2.3"))
	var values string
	for _, f := range ch.Raw {
		if f.Name == "values.yaml" {
			values = string(f.Data)
		}
	}
	g.Expect(values).To(ContainSubstring(`  digest: "` + digest + `"`))
	g.Expect(values).To(ContainSubstring("## @param image.digest"))

	dir := t.TempDir()
	g.Expect(chartutil.ExpandFile(dir, path)).To(Succeed())
	objs, err := chartrender.Render(filepath.Join(dir, "etcd-backup-driver"), chartrender.Release{Name: "etcd-backup-driver", Namespace: "ebd"})
	g.Expect(err).NotTo(HaveOccurred())
	dep := chartrender.Find(objs, "Deployment", "etcd-backup-driver")
	c := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	pinned := "ghcr.io/etcd-backup-driver/etcd-backup-driver:1.2.3@" + digest
	g.Expect(c["image"]).To(Equal(pinned))
	g.Expect(c["args"]).To(ContainElement("--staging-image=" + pinned))
}

// Without a digest the chart is packaged unpinned; bad versions and
// digests are refused.
func TestPackageRefusesBadInput(t *testing.T) {
	g := NewWithT(t)
	chart := chartrender.ChartDir("etcd-backup-driver")
	path, err := Package(chart, Options{Version: "0.2.0-dev.gabc123", OutDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.Load(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Values["image"].(map[string]any)["digest"]).To(Equal(""))

	_, err = Package(chart, Options{Version: "v1.0.0", OutDir: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("not SemVer 2")))
	_, err = Package(chart, Options{Version: "1.0.0", ImageDigest: "latest", OutDir: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("not sha256")))
	_, err = Package(chartrender.ChartDir("etcd"), Options{Version: "1.0.0", ImageDigest: "sha256:" + strings.Repeat("a", 64), OutDir: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring(`found 0 lines`)), "a chart with no image.digest cannot be pinned")
}
