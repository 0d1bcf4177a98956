//go:build tools

// Package tools pins the MinIO server the credential-broker tests run as a
// real S3 server that enforces policies. It is built with
// `go build github.com/minio/minio` (its root package is the command) into
// bin/minio. MinIO is AGPL-licensed: it stays a test tool in this separate
// module, like kube-apiserver, and is never linked into the driver.
package tools

import (
	_ "github.com/minio/minio"
)
