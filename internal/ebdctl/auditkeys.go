package ebdctl

import (
	"fmt"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// DriverNamespace is where the driver, and the platform credentials its
// brokered strategies name, live unless --driver-namespace says otherwise.
const DriverNamespace = "etcd-backup-driver"

func (e *env) auditKeysCommand() *cobra.Command {
	var strategy, driverNS, caFile string
	var remove bool
	cmd := &cobra.Command{
		Use:   "audit-keys --strategy NAME [--remove]",
		Short: "Find (and with --remove delete) S3 keys a brokered strategy's platform credential reaches that are not sound tenant keys",
		Long: `Lists, with the platform credential a brokered Etcd strategy names (read from
its Secret in the driver's namespace, so you need read access there and a
route to the S3 service's admin API), every key that is not a sound tenant
key: keys under the strategy's tenant users that the broker did not make or
that lack a policy of their own that is exactly their tenant's prefix;
tenant keys of the earlier layout (children of the platform credential);
keys of the platform credential itself (the broker issues none there; one
with no policy of its own has every right of the platform credential); and
keys of root with no policy of their own. Run it once after upgrading from a
release whose tenant keys were children of the platform credential;
--remove deletes the first three kinds.
Keys of root without a policy of their own, and keys of the platform
credential with a policy of their own, are listed for review and never
removed. Exit code 1 while a removable key is left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strategy == "" {
				return usagef("audit-keys needs --strategy NAME")
			}
			return e.runAuditKeys(cmd, strategy, driverNS, caFile, remove)
		},
	}
	cmd.Flags().StringVar(&strategy, "strategy", "", "the brokered Etcd strategy (strategy.backups.cozystack.io) to audit")
	cmd.Flags().StringVar(&driverNS, "driver-namespace", DriverNamespace, "the driver's namespace, where the strategy's platform credential Secret is")
	cmd.Flags().BoolVar(&remove, "remove", false, "delete every key found")
	addS3CAFlag(cmd, &caFile)
	return cmd
}

func (e *env) runAuditKeys(cmd *cobra.Command, name, driverNS, caFile string, remove bool) error {
	transport, err := s3Transport(caFile)
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	s, err := strategypolicy.Get(cmd.Context(), c, name)
	if err != nil {
		return fmt.Errorf("Etcd strategy %s: %w", name, err)
	}
	b := &credbroker.Broker{
		Client: c, Reader: c, Namespace: driverNS, Clock: clock.RealClock{},
		Providers: map[driverv1alpha1.CredentialBrokerProvider]credbroker.NewProvider{
			driverv1alpha1.CredentialBrokerMinIO: brokerminio.Connect(&http.Client{Transport: transport, Timeout: 30 * time.Second}),
		},
	}
	found, err := b.Audit(cmd.Context(), s, remove)
	if len(found) == 0 && err == nil {
		fmt.Fprintf(e.streams.Out, "No unsound keys: strategy %s's platform credential has no keys of its own, root has none without a policy of its own, and every tenant key is the broker's and confined to its tenant's prefix.\n", name)
		return nil
	}
	w := tabwriter.NewWriter(e.streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ACCESS KEY\tPARENT\tKIND\tREMOVED\tWHY")
	left, review := 0, 0
	for _, f := range found {
		removed := "no"
		switch {
		case f.Removed:
			removed = "yes"
		case f.Kind.Removable():
			left++
		default:
			removed = "review"
			review++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f.AccessKeyID, f.Parent, f.Kind, removed, f.Why)
	}
	_ = w.Flush()
	if review > 0 {
		fmt.Fprintf(e.streams.ErrOut, "%s: %d keys to review by hand (--remove leaves them): delete those nobody made on purpose (mc admin user svcacct rm), see docs/runbook.md#etcdbackupbrokerplatformkeys.\n", e.name, review)
	}
	if err != nil {
		return err
	}
	if left > 0 {
		fmt.Fprintf(e.streams.ErrOut, "%s: %d keys to remove; run again with --remove to delete them.\n", e.name, left)
		return silentFailure
	}
	return nil
}
