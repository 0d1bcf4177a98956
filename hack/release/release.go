package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// platform is one GOOS/GOARCH the plugin is released for.
type platform struct{ goos, goarch string }

func (p platform) String() string { return p.goos + "_" + p.goarch }

// platforms are those the plugin ships for, in the order they are built.
var platforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
}

// binaries are the released commands, each ./cmd/<name> of the main module.
var binaries = []string{pluginBinary, "ebdctl"}

// pluginBinary is the kubectl plugin, the one the krew manifest installs.
const pluginBinary = "kubectl-etcd_backup"

// extraFiles go into every archive beside the binary, from the repository.
var extraFiles = []string{"README.md", "docs/plugin.md"}

const (
	checksumsFile = "checksums.txt"
	krewFile      = "etcd-backup.yaml"
)

// options are the command line's.
type options struct {
	root, out, buildDir            string
	version, commit, date, ldflags string
	snapshot                       bool
}

// result names what a run wrote, in the order written.
type result struct {
	files []string
}

// semver is SemVer 2.0.0 (semver.org's own expression), the form krew wants
// (with a leading v) and the form the Makefile's VERSION takes.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// validate checks the options and returns the commit's date.
func (o options) validate() (time.Time, error) {
	if o.out == "" {
		return time.Time{}, errors.New("-out is required")
	}
	if !semver.MatchString(o.version) {
		return time.Time{}, fmt.Errorf("-version %q is not SemVer 2 without a leading v (e.g. 0.1.0, 0.2.0-rc.1)", o.version)
	}
	if !fullCommit.MatchString(o.commit) {
		return time.Time{}, fmt.Errorf("-commit %q is not a full commit hash", o.commit)
	}
	date, err := time.Parse(time.RFC3339, o.date)
	if err != nil {
		return time.Time{}, fmt.Errorf("-date: %w", err)
	}
	if o.ldflags == "" {
		return time.Time{}, errors.New("-ldflags is required: the version, commit and date stamps of the Makefile's LDFLAGS")
	}
	return date.UTC(), nil
}

// run builds, packs and describes the release into o.out.
func run(o options) (result, error) {
	var res result
	date, err := o.validate()
	if err != nil {
		return res, err
	}
	if !o.snapshot {
		if err := checkTagged(o.root, o.version, o.commit); err != nil {
			return res, err
		}
	}
	if err := cleanOut(o.out); err != nil {
		return res, err
	}
	buildDir := o.buildDir
	if buildDir == "" {
		if buildDir, err = os.MkdirTemp("", "release-build-"); err != nil {
			return res, err
		}
		defer os.RemoveAll(buildDir)
	}

	var jobs []packJob
	for _, p := range platforms {
		dir := filepath.Join(buildDir, p.String())
		if err := goBuild(o.root, dir, p, o.ldflags); err != nil {
			return res, err
		}
		for _, bin := range binaries {
			jobs = append(jobs, packJob{name: archiveName(bin, o.version, p), entries: archiveEntries(o.root, dir, bin)})
		}
	}
	if err := packAll(o.out, jobs, date); err != nil {
		return res, err
	}
	var archives []string
	for _, j := range jobs {
		archives = append(archives, j.name)
	}
	if err := writeKrewManifest(filepath.Join(o.out, krewFile), o.out, o.version); err != nil {
		return res, fmt.Errorf("%s: %w", krewFile, err)
	}
	summed := append(append([]string{}, archives...), krewFile)
	sort.Strings(summed)
	if err := writeChecksums(filepath.Join(o.out, checksumsFile), o.out, summed); err != nil {
		return res, fmt.Errorf("%s: %w", checksumsFile, err)
	}
	for _, f := range append(archives, krewFile, checksumsFile) {
		res.files = append(res.files, filepath.Join(o.out, f))
	}
	return res, nil
}

// archiveName is the released file name of bin for p:
// <bin>_<version>_<goos>_<goarch>.tar.gz, the usual form for Go commands
// (the krew manifest's URIs and docs/install.md use it).
func archiveName(bin, version string, p platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", bin, version, p.goos, p.goarch)
}

// cleanOut empties the output folder so that nothing of an earlier run is
// taken for part of this one; it refuses a folder that looks like a source
// tree, since -out is removed whole.
func cleanOut(out string) error {
	for _, marker := range []string{".git", "go.mod"} {
		if _, err := os.Lstat(filepath.Join(out, marker)); err == nil {
			return fmt.Errorf("-out %s holds %s: refusing to empty it", out, marker)
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.MkdirAll(out, 0o755)
}
