// Command kubectl-etcd_backup is ebdctl as a kubectl plugin: on PATH, kubectl
// runs it for `kubectl etcd-backup ...` (an underscore in the file name is a
// dash in the command). See internal/ebdctl.
package main

import (
	"os"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
)

func main() {
	os.Exit(ebdctl.Main("kubectl etcd-backup", os.Args[1:], ebdctl.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
