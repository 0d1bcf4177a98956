package ebdctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

func (e *env) diffCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare what two Backups hold: per-resource counts and namespaces",
		Long: `Compares the manifests of Backups A and B (as the driver recorded them after
inspecting each snapshot), per Kubernetes keyspace: the resources whose object
counts differ (A → B and the change), and the namespaces only in A or only in
B. A manifest lists at most 4 keyspaces and 24 resources each, fewer when its
report had to be cut, and names namespaces only when there are at most 16; a
count a cut list does not hold is unknown and shows as "?". Exits 1 when
either Backup has no manifest; differences alone exit 0.`,
		Example: `  %[1]s diff etcd-20260503-0200 etcd-20260504-0200 -n tenant-a
  %[1]s diff etcd-20260503-0200 etcd-20260504-0200 -n tenant-a -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStructuredOutput(output); err != nil {
				return err
			}
			return e.runDiff(cmd.Context(), args[0], args[1], output)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml")
	return cmd
}

// DiffResult is what diff found; -o json and -o yaml print it.
type DiffResult struct {
	Namespace string `json:"namespace"`
	From      string `json:"from"`
	To        string `json:"to"`
	// FromRevision and ToRevision are the snapshots' revisions.
	FromRevision int64 `json:"fromRevision"`
	ToRevision   int64 `json:"toRevision"`
	FromKeys     int64 `json:"fromKeys"`
	ToKeys       int64 `json:"toKeys"`
	// Keyspaces compare each keyspace (manifest.Compare), with only the
	// resources whose count changed or is unknown.
	Keyspaces []manifest.KeyspaceDiff `json:"keyspaces"`
}

func (e *env) runDiff(ctx context.Context, from, to, output string) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	var manifests [2]*driverv1alpha1.BackupManifest
	for i, name := range []string{from, to} {
		b, err := getBackup(ctx, c, ns, name)
		if err != nil {
			return err
		}
		m := artifact.Manifest(b)
		if m == nil {
			return fmt.Errorf("Backup %s/%s has no manifest: %s", ns, name,
				noManifestReason(conditionSummary(b, backupsv1alpha1.BackupConditionInspected)))
		}
		manifests[i] = m
	}
	res := diffManifests(ns, from, to, manifests[0], manifests[1])
	if output == outputJSON || output == outputYAML {
		return writeStructured(e.streams.Out, output, res)
	}
	return printDiff(e.streams.Out, res)
}

// diffManifests compares two manifests keyspace by keyspace, with the
// driver's rule for a list that was cut: what it does not list is
// unknown, not zero. Namespace names are sorted for reading.
func diffManifests(ns, from, to string, a, b *driverv1alpha1.BackupManifest) *DiffResult {
	res := &DiffResult{Namespace: ns, From: from, To: to, FromRevision: a.Revision, ToRevision: b.Revision, FromKeys: a.Keys, ToKeys: b.Keys,
		Keyspaces: manifest.Compare(a, b)}
	for i := range res.Keyspaces {
		k := &res.Keyspaces[i]
		k.Resources = k.Changes()
		slices.Sort(k.NamespacesOnlyInFrom)
		slices.Sort(k.NamespacesOnlyInTo)
	}
	return res
}

func printDiff(w io.Writer, r *DiffResult) error {
	fmt.Fprintf(w, "Backup %s/%s → %s: revision %d → %d, keys %d → %d (%s)\n", r.Namespace, r.From, r.To,
		r.FromRevision, r.ToRevision, r.FromKeys, r.ToKeys, signed(r.ToKeys-r.FromKeys))
	if len(r.Keyspaces) == 0 {
		_, err := fmt.Fprintln(w, "Neither snapshot holds a Kubernetes keyspace.")
		return err
	}
	for _, k := range r.Keyspaces {
		fmt.Fprintf(w, "\nKeyspace %s: objects %s → %s (%s), namespaces %s → %s (%s)", oneLine(k.Prefix),
			countOrUnknown(k.ObjectsFrom), countOrUnknown(k.ObjectsTo), change(k.ObjectsFrom, k.ObjectsTo),
			countOrUnknown(k.NamespacesFrom), countOrUnknown(k.NamespacesTo), change(k.NamespacesFrom, k.NamespacesTo))
		for _, s := range []struct {
			listed bool
			known  *int64
			name   string
		}{{k.InFrom, k.ObjectsFrom, r.From}, {k.InTo, k.ObjectsTo, r.To}} {
			if !s.listed && s.known == nil {
				fmt.Fprintf(w, " (cut from %s's list of keyspaces: its counts there are unknown)", s.name)
			}
		}
		switch {
		case !k.InFrom && k.ObjectsFrom != nil:
			fmt.Fprintf(w, " (only in %s)", r.To)
		case !k.InTo && k.ObjectsTo != nil:
			fmt.Fprintf(w, " (only in %s)", r.From)
		}
		fmt.Fprintln(w)
		if len(k.Resources) == 0 {
			fmt.Fprintln(w, "  no resource changed its count")
		} else {
			t := &table{w: w, headers: []string{"  RESOURCE", strings.ToUpper(oneLine(r.From)), strings.ToUpper(oneLine(r.To)), "CHANGE"}}
			for _, c := range k.Resources {
				t.add("  "+oneLine(c.Name), countOrUnknown(c.From), countOrUnknown(c.To), change(c.From, c.To))
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		switch {
		case k.ObjectsFrom == nil || k.ObjectsTo == nil:
			fmt.Fprintln(w, "  namespaces: which ones differ is not known")
		case k.NamespaceNamesUnknown:
			fmt.Fprintln(w, "  namespaces: too many to name; which ones differ is not known")
		case len(k.NamespacesOnlyInFrom) == 0 && len(k.NamespacesOnlyInTo) == 0:
			fmt.Fprintln(w, "  namespaces: the same in both")
		default:
			if len(k.NamespacesOnlyInFrom) > 0 {
				fmt.Fprintf(w, "  namespaces only in %s: %s\n", r.From, oneLine(strings.Join(k.NamespacesOnlyInFrom, ", ")))
			}
			if len(k.NamespacesOnlyInTo) > 0 {
				fmt.Fprintf(w, "  namespaces only in %s: %s\n", r.To, oneLine(strings.Join(k.NamespacesOnlyInTo, ", ")))
			}
		}
	}
	return nil
}

func countOrUnknown(n *int64) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

// change is to - from with its sign, or "?" when either is unknown.
func change(from, to *int64) string {
	if from == nil || to == nil {
		return "?"
	}
	return signed(*to - *from)
}

// signed renders a change with its sign (+3, -2, 0).
func signed(n int64) string {
	if n > 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprint(n)
}
