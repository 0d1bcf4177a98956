//go:build tools

// Package tools pins etcdutl 3.6.x, built with
// `go build go.etcd.io/etcd/etcdutl/v3` (its root package is the command).
package tools

import (
	_ "go.etcd.io/etcd/etcdutl/v3"
)
