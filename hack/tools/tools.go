//go:build tools

// Package tools pins the code generators this project runs, so that
// `go build` in this module uses exactly the versions in go.mod.
package tools

import (
	// etcdutl matching the etcd of cmd/etcd (its root package is the
	// command); keep its version equal to go.etcd.io/etcd/server/v3's.
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
