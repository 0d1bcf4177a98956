package main

import (
	"bytes"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// The repository the GitHub release is on: the manifest's URIs point at its
// release assets.
const (
	repository = "etcd-backup-driver/etcd-backup-driver"
	homepage   = "https://github.com/" + repository
)

// krewPlugin is a krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2),
// the fields krew-index uses, in its documented order.
type krewPlugin struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   krewMetadata `yaml:"metadata"`
	Spec       krewSpec     `yaml:"spec"`
}

type krewMetadata struct {
	Name string `yaml:"name"`
}

type krewSpec struct {
	Version          string         `yaml:"version"`
	Homepage         string         `yaml:"homepage"`
	ShortDescription string         `yaml:"shortDescription"`
	Description      string         `yaml:"description"`
	Caveats          string         `yaml:"caveats"`
	Platforms        []krewPlatform `yaml:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `yaml:"selector"`
	URI      string       `yaml:"uri"`
	SHA256   string       `yaml:"sha256"`
	Bin      string       `yaml:"bin"`
}

type krewSelector struct {
	MatchLabels krewLabels `yaml:"matchLabels"`
}

type krewLabels struct {
	OS   string `yaml:"os"`
	Arch string `yaml:"arch"`
}

const (
	krewName             = "etcd-backup"
	krewShortDescription = "Back up, restore and check tenants' etcd through the etcd-backup-driver"
	krewDescription      = `Creates and follows BackupJobs and RestoreJobs of the etcd-backup-driver
(the Etcd strategy driver of the Cozystack backups API), lists Backups
newest first, tells whether the newest good backup is fresh enough, and
verifies a Backup against its S3 object. It talks to the API server as
you, with your kubeconfig, never to the driver.
`
	krewCaveats = `Commands act with your own permissions on backups.cozystack.io objects.
See ` + homepage + `/blob/main/docs/plugin.md
`
)

// releaseAssetURI is where the GitHub release of version serves name.
func releaseAssetURI(version, name string) string {
	return homepage + "/releases/download/v" + version + "/" + name
}

// writeKrewManifest writes the krew manifest of the plugin's archives in
// dir (already written): one platform per released GOOS/GOARCH, each with
// the sha256 of the archive its URI names. Submitting it to krew-index is
// a pull request of its own; the release attaches it.
func writeKrewManifest(dst, dir, version string) error {
	m := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: krewName},
		Spec: krewSpec{
			Version:          "v" + version,
			Homepage:         homepage,
			ShortDescription: krewShortDescription,
			Description:      krewDescription,
			Caveats:          krewCaveats,
		},
	}
	for _, p := range platforms {
		name := archiveName(pluginBinary, version, p)
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		m.Spec.Platforms = append(m.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: krewLabels{OS: p.goos, Arch: p.goarch}},
			URI:      releaseAssetURI(version, name),
			SHA256:   sum,
			Bin:      pluginBinary,
		})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, b.Bytes(), 0o644)
}
