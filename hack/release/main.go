// Command release builds the plugin's release: kubectl-etcd_backup (the
// kubectl plugin) and ebdctl for linux and darwin on amd64 and arm64, each
// packed into a reproducible tar.gz with README.md and docs/plugin.md, a
// checksums.txt (sha256) and the krew manifest etcd-backup.yaml, all in the
// output folder:
//
//	cd hack/release && go run . -root ../.. -out ../../dist -version 0.1.0 \
//	    -commit $(git rev-parse HEAD) -date 2026-01-02T03:04:05Z -ldflags '...'
//
// `make plugin-release` runs it with the Makefile's VERSION, GIT_COMMIT,
// GIT_DATE and LDFLAGS (the same stamps as the image's binaries), and the
// release workflow runs that target on a tag; `make release-check` runs it
// with -snapshot and then this module's tests on what it wrote. Without
// -snapshot it refuses a commit that is not tagged v<version> or a checkout
// that differs from it. Signatures and SBOMs are the workflow's (cosign and
// syft run there only).
//
// It is a module of its own so that the main module's `go test ./...` does
// not build the release a second time.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository's top folder (the main module)")
	flag.StringVar(&o.out, "out", "", "folder the archives, checksums.txt and etcd-backup.yaml are written to; emptied first")
	flag.StringVar(&o.buildDir, "build", "", "folder the binaries are built in, kept between runs (go build relinks only what changed); a temporary one when empty")
	flag.StringVar(&o.version, "version", "", "the release's version, SemVer 2 without a leading v")
	flag.StringVar(&o.commit, "commit", "", "the full commit the release is built from")
	flag.StringVar(&o.date, "date", "", "the commit's date (RFC 3339, UTC): the archives' file times")
	flag.StringVar(&o.ldflags, "ldflags", "", "go build -ldflags, as the Makefile's LDFLAGS stamp the image's binaries")
	flag.BoolVar(&o.snapshot, "snapshot", false, "build any commit and checkout (no tag required); nothing is published either way")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: release -out DIR -version V -commit SHA -date RFC3339 -ldflags FLAGS [-root DIR] [-build DIR] [-snapshot]")
		os.Exit(2)
	}
	res, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, f := range res.files {
		fmt.Println(f)
	}
}
