// Package chartpackage packages the driver's chart for a release with the
// Helm SDK, as `helm package` does, with the release's version and its
// image's digest pinned: Chart.yaml gets the version as version and
// appVersion (so the image tag, which defaults to appVersion, is the
// release's), values.yaml gets image.digest (so the manager, and with it
// the staging Job, pull the image by digest). The result,
// <name>-<version>.tgz, is what `helm push` sends to an OCI registry.
package chartpackage

import (
	"fmt"
	"regexp"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Options say what to stamp into the package.
type Options struct {
	// Version is the chart's version and appVersion (SemVer 2, no "v").
	Version string
	// ImageDigest pins the image (sha256:<64 hex>); empty leaves it
	// unpinned, pulled by tag.
	ImageDigest string
	// OutDir receives the .tgz.
	OutDir string
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// digestLine is image.digest in the chart's values.yaml: the one line
// `  digest: ""` of the top-level image block.
var digestLine = regexp.MustCompile(`(?m)^(image:\n(?:  .*\n|\s*\n)*?  digest: )""$`)

// Package packages the chart in dir and returns the path of the .tgz.
func Package(dir string, o Options) (string, error) {
	v, err := semver.StrictNewVersion(o.Version)
	if err != nil {
		return "", fmt.Errorf("chart version %q is not SemVer 2 (no leading v): %w", o.Version, err)
	}
	if o.ImageDigest != "" && !digestPattern.MatchString(o.ImageDigest) {
		return "", fmt.Errorf("image digest %q is not sha256:<64 hex digits>", o.ImageDigest)
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return "", err
	}
	ch.Metadata.Version = v.String()
	ch.Metadata.AppVersion = v.String()
	if o.ImageDigest != "" {
		pinned := false
		for _, f := range ch.Raw {
			if f.Name != chartutil.ValuesfileName {
				continue
			}
			if n := len(digestLine.FindAllIndex(f.Data, -1)); n != 1 {
				return "", fmt.Errorf("%s/%s: found %d lines `  digest: \"\"` in the image block, want 1", dir, chartutil.ValuesfileName, n)
			}
			f.Data = digestLine.ReplaceAll(f.Data, []byte(`${1}"`+o.ImageDigest+`"`))
			values, err := chartutil.ReadValues(f.Data)
			if err != nil {
				return "", err
			}
			if got, _ := values.PathValue("image.digest"); got != o.ImageDigest {
				return "", fmt.Errorf("pinning image.digest in %s: it reads %v", chartutil.ValuesfileName, got)
			}
			ch.Values = values
			pinned = true
		}
		if !pinned {
			return "", fmt.Errorf("%s has no %s", dir, chartutil.ValuesfileName)
		}
	}
	if err := ch.Validate(); err != nil {
		return "", err
	}
	return chartutil.Save(ch, o.OutDir)
}
