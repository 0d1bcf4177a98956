package ebdctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

func (e *env) diffCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare what two Backups hold: per-resource counts and namespaces",
		Long: `Compares the manifests of Backups A and B (as the driver recorded them after
inspecting each snapshot), per Kubernetes keyspace: the resources whose object
counts differ (A → B and the change), and the namespaces only in A or only in
B. A manifest lists at most 24 resources and names namespaces only when there
are at most 16; a count not listed shows as "?". Exits 1 when either Backup
has no manifest; differences alone exit 0.`,
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
	FromRevision int64          `json:"fromRevision"`
	ToRevision   int64          `json:"toRevision"`
	FromKeys     int64          `json:"fromKeys"`
	ToKeys       int64          `json:"toKeys"`
	Keyspaces    []KeyspaceDiff `json:"keyspaces"`
}

// KeyspaceDiff compares one keyspace (by prefix) of the two manifests.
type KeyspaceDiff struct {
	Prefix string `json:"prefix"`
	// InFrom and InTo say whether each manifest has the keyspace.
	InFrom         bool  `json:"inFrom"`
	InTo           bool  `json:"inTo"`
	ObjectsFrom    int64 `json:"objectsFrom"`
	ObjectsTo      int64 `json:"objectsTo"`
	NamespacesFrom int64 `json:"namespacesFrom"`
	NamespacesTo   int64 `json:"namespacesTo"`
	// Resources are those whose counts differ, largest change first.
	Resources []ResourceChange `json:"resources,omitempty"`
	// NamespacesOnlyInFrom are gone in To; NamespacesOnlyInTo are new.
	NamespacesOnlyInFrom []string `json:"namespacesOnlyInFrom,omitempty"`
	NamespacesOnlyInTo   []string `json:"namespacesOnlyInTo,omitempty"`
	// NamespaceNamesUnknown: a manifest has too many namespaces to name
	// them, so which ones differ cannot be said.
	NamespaceNamesUnknown bool `json:"namespaceNamesUnknown,omitempty"`
}

// ResourceChange is one resource's count in both. A nil count was not
// listed in that manifest (beyond its bound): the change is unknown.
type ResourceChange struct {
	Name  string `json:"name"`
	From  *int64 `json:"from"`
	To    *int64 `json:"to"`
	Delta *int64 `json:"delta"`
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
	var manifests [2]*backupsv1alpha1.BackupManifest
	for i, name := range []string{from, to} {
		b, err := getBackup(ctx, c, ns, name)
		if err != nil {
			return err
		}
		if b.Status.Manifest == nil {
			return fmt.Errorf("Backup %s/%s has no manifest: %s", ns, name,
				noManifestReason(conditionSummary(b, backupsv1alpha1.BackupConditionInspected)))
		}
		manifests[i] = b.Status.Manifest
	}
	res := diffManifests(ns, from, to, manifests[0], manifests[1])
	if output == outputJSON || output == outputYAML {
		return writeStructured(e.streams.Out, output, res)
	}
	return printDiff(e.streams.Out, res)
}

// diffManifests compares two manifests keyspace by keyspace.
func diffManifests(ns, from, to string, a, b *backupsv1alpha1.BackupManifest) *DiffResult {
	res := &DiffResult{Namespace: ns, From: from, To: to, FromRevision: a.Revision, ToRevision: b.Revision, FromKeys: a.Keys, ToKeys: b.Keys,
		Keyspaces: []KeyspaceDiff{}}
	byPrefix := func(m *backupsv1alpha1.BackupManifest) map[string]*backupsv1alpha1.KeyspaceManifest {
		out := map[string]*backupsv1alpha1.KeyspaceManifest{}
		for i := range m.Keyspaces {
			out[m.Keyspaces[i].Prefix] = &m.Keyspaces[i]
		}
		return out
	}
	ka, kb := byPrefix(a), byPrefix(b)
	var prefixes []string
	for p := range ka {
		prefixes = append(prefixes, p)
	}
	for p := range kb {
		if ka[p] == nil {
			prefixes = append(prefixes, p)
		}
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		res.Keyspaces = append(res.Keyspaces, diffKeyspace(p, ka[p], kb[p], a.Truncated, b.Truncated))
	}
	return res
}

func diffKeyspace(prefix string, a, b *backupsv1alpha1.KeyspaceManifest, aCut, bCut bool) KeyspaceDiff {
	d := KeyspaceDiff{Prefix: prefix, InFrom: a != nil, InTo: b != nil}
	empty := &backupsv1alpha1.KeyspaceManifest{}
	if a == nil {
		a, aCut = empty, false
	}
	if b == nil {
		b, bCut = empty, false
	}
	d.ObjectsFrom, d.ObjectsTo, d.NamespacesFrom, d.NamespacesTo = a.Objects, b.Objects, a.Namespaces, b.Namespaces

	counts := func(k *backupsv1alpha1.KeyspaceManifest) map[string]int64 {
		out := map[string]int64{}
		for _, r := range k.Resources {
			out[r.Name] = r.Count
		}
		return out
	}
	// A resource missing from a list is 0 unless the list was cut, when
	// its count is unknown.
	lookup := func(m map[string]int64, name string, cut bool) *int64 {
		if v, ok := m[name]; ok {
			return &v
		}
		if cut {
			return nil
		}
		zero := int64(0)
		return &zero
	}
	ca, cb := counts(a), counts(b)
	names := map[string]bool{}
	for n := range ca {
		names[n] = true
	}
	for n := range cb {
		names[n] = true
	}
	for n := range names {
		ch := ResourceChange{Name: n, From: lookup(ca, n, aCut), To: lookup(cb, n, bCut)}
		if ch.From != nil && ch.To != nil {
			if *ch.From == *ch.To {
				continue
			}
			delta := *ch.To - *ch.From
			ch.Delta = &delta
		}
		d.Resources = append(d.Resources, ch)
	}
	sort.Slice(d.Resources, func(i, j int) bool {
		x, y := absDelta(d.Resources[i]), absDelta(d.Resources[j])
		if x != y {
			return x > y
		}
		return d.Resources[i].Name < d.Resources[j].Name
	})

	// Namespace names are listed only for small keyspaces.
	if (len(a.NamespaceNames) == 0 && a.Namespaces > 0) || (len(b.NamespaceNames) == 0 && b.Namespaces > 0) {
		d.NamespaceNamesUnknown = true
		return d
	}
	d.NamespacesOnlyInFrom = minus(a.NamespaceNames, b.NamespaceNames)
	d.NamespacesOnlyInTo = minus(b.NamespaceNames, a.NamespaceNames)
	return d
}

// absDelta orders changes: unknown ones last.
func absDelta(c ResourceChange) int64 {
	if c.Delta == nil {
		return -1
	}
	if *c.Delta < 0 {
		return -*c.Delta
	}
	return *c.Delta
}

// minus is the sorted members of a not in b.
func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func printDiff(w io.Writer, r *DiffResult) error {
	fmt.Fprintf(w, "Backup %s/%s → %s: revision %d → %d, keys %d → %d (%s)\n", r.Namespace, r.From, r.To,
		r.FromRevision, r.ToRevision, r.FromKeys, r.ToKeys, signed(r.ToKeys-r.FromKeys))
	if len(r.Keyspaces) == 0 {
		_, err := fmt.Fprintln(w, "Neither snapshot holds a Kubernetes keyspace.")
		return err
	}
	for _, k := range r.Keyspaces {
		fmt.Fprintf(w, "\nKeyspace %s: objects %d → %d (%s), namespaces %d → %d (%s)", oneLine(k.Prefix),
			k.ObjectsFrom, k.ObjectsTo, signed(k.ObjectsTo-k.ObjectsFrom), k.NamespacesFrom, k.NamespacesTo, signed(k.NamespacesTo-k.NamespacesFrom))
		switch {
		case !k.InFrom:
			fmt.Fprintf(w, " (only in %s)", r.To)
		case !k.InTo:
			fmt.Fprintf(w, " (only in %s)", r.From)
		}
		fmt.Fprintln(w)
		if len(k.Resources) == 0 {
			fmt.Fprintln(w, "  no resource changed its count")
		} else {
			t := &table{w: w, headers: []string{"  RESOURCE", strings.ToUpper(oneLine(r.From)), strings.ToUpper(oneLine(r.To)), "CHANGE"}}
			for _, c := range k.Resources {
				change := "?"
				if c.Delta != nil {
					change = signed(*c.Delta)
				}
				t.add("  "+oneLine(c.Name), countOrUnknown(c.From), countOrUnknown(c.To), change)
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		switch {
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

// signed renders a change with its sign (+3, -2, 0).
func signed(n int64) string {
	if n > 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprint(n)
}
