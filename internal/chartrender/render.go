// Package chartrender renders the project's Helm charts with the Helm SDK,
// exactly as `helm template` would (client-only install, schema validation
// on), into unstructured objects. The chart tests and the sandbox's
// helm-controller stand-in both render through it, so they agree on what a
// chart produces.
package chartrender

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Release is one rendering request.
type Release struct {
	// Name is the Helm release name.
	Name string
	// Namespace is the release namespace.
	Namespace string
	// Values override the chart's values.yaml.
	Values map[string]any
	// IncludeCRDs adds the chart's crds/ folder to the output.
	IncludeCRDs bool
}

// ChartDir returns the folder of one of the repository's charts
// (charts/<name>), located from this source file so tests and tools work from
// any working directory.
func ChartDir(name string) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("chartrender: cannot locate source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", name)
}

// Render loads the chart at dir and renders rel. The error carries Helm's
// message unchanged (schema violations, `fail` calls), so callers can show it
// to whoever wrote the values.
func Render(dir string, rel Release) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly = true
	install.DryRun = true
	install.Replace = true // no release store to conflict with
	install.ReleaseName = rel.Name
	install.Namespace = rel.Namespace
	install.IncludeCRDs = rel.IncludeCRDs
	values := rel.Values
	if values == nil {
		values = map[string]any{}
	}
	out, err := install.Run(chrt, values)
	if err != nil {
		return nil, fmt.Errorf("render chart %s as release %q: %w", chrt.Name(), rel.Name, err)
	}
	return Decode(out.Manifest)
}

// Decode splits a multi-document manifest into objects, in Helm's manifest
// order. Empty documents are skipped.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	// SplitManifests names documents manifest-0, manifest-1, ...; sort by
	// the number so the output keeps the rendering order.
	sort.Slice(keys, func(i, j int) bool { return manifestIndex(keys[i]) < manifestIndex(keys[j]) })
	var objs []*unstructured.Unstructured
	for _, k := range keys {
		doc := strings.TrimSpace(docs[k])
		if doc == "" {
			continue
		}
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("decode rendered document %s: %w", k, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}

func manifestIndex(key string) int {
	var n int
	_, _ = fmt.Sscanf(key, "manifest-%d", &n)
	return n
}

// Find returns the object of the given kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
