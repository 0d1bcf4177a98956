// Command etcd is the upstream etcd 3.5.x server built from the Go module
// proxy, for the tests that restore staged snapshots with every etcd minor
// the etcd-operator may run.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
