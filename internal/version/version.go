// Package version is what a release build stamps into the binaries: the
// version, the commit and the commit's date (never the time of the build, so
// that two builds of one commit are the same bytes). `make image` and the
// release set them with -ldflags -X; a plain `go build` leaves them empty and
// String falls back to what the Go toolchain records of the checkout.
package version

import (
	"fmt"
	"runtime/debug"
)

// Set at link time: -X github.com/etcd-backup-driver/etcd-backup-driver/internal/version.Version=...
var (
	// Version is the release, e.g. 0.1.0, or a development version.
	Version string
	// Commit is the full git commit the binary was built from.
	Commit string
	// Date is the commit's date (RFC 3339, UTC).
	Date string
)

// Info is what a binary reports about its build.
type Info struct {
	Version, Commit, Date string
}

// Get returns the stamped values; those not stamped come from the build
// information the toolchain embeds (vcs.revision and vcs.time of the
// checkout, when it was built from one), else "unknown".
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if i.Commit == "" {
			i.Commit = settings["vcs.revision"]
			if i.Commit != "" && settings["vcs.modified"] == "true" {
				i.Commit += "-dirty"
			}
		}
		if i.Date == "" {
			i.Date = settings["vcs.time"]
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
	}
	for _, f := range []*string{&i.Version, &i.Commit, &i.Date} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return i
}

// String is the line `--version` prints for the program name.
func String(name string) string {
	i := Get()
	return fmt.Sprintf("%s %s (commit %s, %s)", name, i.Version, i.Commit, i.Date)
}
