// Command ebdctl is the etcd-backup-driver's command line:
//
//	ebdctl backup APP [--wait]
//	ebdctl restore APP --from BACKUP|--latest [--wait]
//	ebdctl list [APP] | status | verify BACKUP
//	ebdctl migrate-legacy-values -f values.yaml --namespace NS [--app NAME]
//
// The same program is the kubectl plugin `kubectl etcd-backup`
// (cmd/kubectl-etcd_backup); internal/ebdctl holds both.
package main

import (
	"os"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
)

func main() {
	os.Exit(ebdctl.Main("ebdctl", os.Args[1:], ebdctl.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
