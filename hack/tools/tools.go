//go:build tools

// Package tools pins the code generators this project runs, so that
// `go build` in this module uses exactly the versions in go.mod.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
