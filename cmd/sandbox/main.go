// Command sandbox runs the etcd-backup-driver on one machine with no
// kubelet (see internal/sandbox), and helps scripts reach the etcd data:
//
//	sandbox run [--dir DIR] [--env-file FILE] [--s3 embedded|minio] [--image] [--plain-http]   start; Ctrl-C stops everything
//	sandbox kv write|check|delete|get|put|revision ...     sentinel data in an app's etcd
//	sandbox keyscope --namespace NS --secret S  what a brokered tenant key reaches
//
// `make sandbox` and `make demo` drive it.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "kv":
		err = kv(os.Args[2:])
	case "keyscope":
		err = keyScope(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  sandbox run [--dir DIR] [--env-file FILE] [--s3 embedded|minio] [--image] [--plain-http]
  sandbox kv write|check --namespace NS [--prefix P] [--count N] [--size BYTES] [--generation G]
  sandbox kv delete --namespace NS --prefix P
  sandbox kv get --namespace NS KEY
  sandbox kv put --namespace NS KEY VALUE
  sandbox kv revision --namespace NS
  sandbox keyscope --namespace NS --secret etcd-backup-broker-<strategy>
`)
	os.Exit(2)
}
