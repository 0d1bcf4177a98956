package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/legacyvalues"
)

func migrateLegacyValues(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate-legacy-values", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", `values file of the etcd release ("-" reads stdin)`)
	var o legacyvalues.Options
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the etcd application (required)")
	fs.StringVar(&o.App, "app", legacyvalues.DefaultApp, "name of the etcd application")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ebdctl migrate-legacy-values -f values.yaml --namespace NS [--app NAME]")
		fmt.Fprintln(stderr, "Prints the Secret, Etcd strategy, BackupClass and Plan that replace backup.* as YAML.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	var data []byte
	var err error
	if *file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ebdctl: read values: %v\n", err)
		return 1
	}
	backup, err := legacyvalues.ParseValues(data)
	if err != nil {
		fmt.Fprintf(stderr, "ebdctl: %s: %v\n", *file, err)
		return 1
	}
	objs, err := legacyvalues.Convert(backup, o)
	if err != nil {
		fmt.Fprintf(stderr, "ebdctl: %s: cannot migrate:\n%v\n", *file, err)
		return 1
	}
	out, err := objs.YAML()
	if err != nil {
		fmt.Fprintf(stderr, "ebdctl: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "ebdctl: write: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "ebdctl: the output holds the S3 keys in a Secret; keep it out of Git.")
	return 0
}
