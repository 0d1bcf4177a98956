// Command ebdctl holds the etcd-backup-driver's operator tools.
//
//	ebdctl migrate-legacy-values -f values.yaml --namespace NS [--app NAME]
//
// converts an etcd release's removed backup.* values into an Etcd strategy,
// a BackupClass, a Plan and the S3 credentials Secret, printed as YAML.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: ebdctl COMMAND [flags]

commands:
  migrate-legacy-values   convert the etcd chart's removed backup.* values into
                          an Etcd strategy, BackupClass, Plan and credentials Secret
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "migrate-legacy-values":
		return migrateLegacyValues(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "ebdctl: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
