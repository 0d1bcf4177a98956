// Command chartdoc regenerates the parameter table of each named chart's
// README.md from the @param comments in its values.yaml:
//
//	go run ./hack/chartdoc charts/etcd
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartdoc"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chartdoc CHART_DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		out, err := chartdoc.Generate(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chartdoc:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "chartdoc:", err)
			os.Exit(1)
		}
	}
}
