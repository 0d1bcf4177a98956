// Command chartpackage packages a chart for a release (internal/chartpackage):
//
//	go run ./hack/chartpackage --version 0.1.0 [--image-digest sha256:...] --out bin/charts charts/etcd-backup-driver
//
// `make chart-package` runs it; it prints the .tgz's path.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartpackage"
)

func main() {
	var o chartpackage.Options
	flag.StringVar(&o.Version, "version", "", "chart version and appVersion (SemVer 2, no leading v)")
	flag.StringVar(&o.ImageDigest, "image-digest", "", "pin the image to this digest (sha256:...)")
	flag.StringVar(&o.OutDir, "out", ".", "folder the .tgz is written to")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: chartpackage --version V [--image-digest sha256:...] [--out DIR] CHART_DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "chartpackage:", err)
		os.Exit(1)
	}
	path, err := chartpackage.Package(flag.Arg(0), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartpackage:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
