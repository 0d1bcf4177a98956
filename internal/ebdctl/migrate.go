package ebdctl

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/legacyvalues"
)

func (e *env) migrateCommand() *cobra.Command {
	var file string
	var o legacyvalues.Options
	cmd := &cobra.Command{
		Use:   "migrate-legacy-values -f values.yaml --namespace NS [--app NAME]",
		Short: "Convert the etcd chart's removed backup.* values into a strategy, BackupClass, Plan and Secret",
		Long: `Converts an etcd release's removed backup.* values into the Etcd strategy,
BackupClass, Plan and S3 credentials Secret that replace them, printed as
YAML. Works offline; --namespace (the etcd application's) is required.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = *e.kube.Namespace
			if file == "" || o.Namespace == "" {
				return usagef("migrate-legacy-values needs -f FILE and --namespace NS")
			}
			return e.runMigrate(file, o)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", `values file of the etcd release ("-" reads stdin)`)
	cmd.Flags().StringVar(&o.App, "app", legacyvalues.DefaultApp, "name of the etcd application")
	return cmd
}

func (e *env) runMigrate(file string, o legacyvalues.Options) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(e.streams.In)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return fmt.Errorf("read values: %w", err)
	}
	backup, err := legacyvalues.ParseValues(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	objs, err := legacyvalues.Convert(backup, o)
	if err != nil {
		return fmt.Errorf("%s: cannot migrate:\n%w", file, err)
	}
	out, err := objs.YAML()
	if err != nil {
		return err
	}
	if _, err := e.streams.Out.Write(out); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	fmt.Fprintf(e.streams.ErrOut, "%s: the output holds the S3 keys in a Secret; keep it out of Git.\n", e.name)
	return nil
}
