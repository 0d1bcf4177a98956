package manifest

import (
	"slices"
	"sort"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// KeyspaceDiff compares one Kubernetes keyspace (by prefix) of two
// manifests, From and To. A count is nil where it is unknown: the
// keyspace, or the entry, is missing from a list of that side that was
// cut (see the rule in whole.go).
type KeyspaceDiff struct {
	Prefix string `json:"prefix"`
	// InFrom and InTo say whether each manifest lists the keyspace.
	InFrom         bool   `json:"inFrom"`
	InTo           bool   `json:"inTo"`
	ObjectsFrom    *int64 `json:"objectsFrom"`
	ObjectsTo      *int64 `json:"objectsTo"`
	NamespacesFrom *int64 `json:"namespacesFrom"`
	NamespacesTo   *int64 `json:"namespacesTo"`
	// Resources are the resources either side lists, unchanged ones
	// included, largest change first and unknown ones last (Changes
	// leaves the unchanged out).
	Resources []ResourceChange `json:"resources,omitempty"`
	// NamespacesOnlyInFrom are gone in To; NamespacesOnlyInTo are new;
	// each in the order its manifest lists them.
	NamespacesOnlyInFrom []string `json:"namespacesOnlyInFrom,omitempty"`
	NamespacesOnlyInTo   []string `json:"namespacesOnlyInTo,omitempty"`
	// NamespaceNamesUnknown: a side does not name all its namespaces (too
	// many to list, or the keyspace is unknown there), so which ones
	// differ cannot be said.
	NamespaceNamesUnknown bool `json:"namespaceNamesUnknown,omitempty"`
}

// ResourceChange is one resource's count in both manifests; a nil count
// is unknown, and so is then the change.
type ResourceChange struct {
	Name  string `json:"name"`
	From  *int64 `json:"from"`
	To    *int64 `json:"to"`
	Delta *int64 `json:"delta"`
}

// Compare compares from and to keyspace by keyspace, every keyspace
// either lists, by prefix.
func Compare(from, to *driverv1alpha1.BackupManifest) []KeyspaceDiff {
	a, b := sideOf(from), sideOf(to)
	var prefixes []string
	for _, m := range []*driverv1alpha1.BackupManifest{from, to} {
		for _, k := range m.Keyspaces {
			prefixes = append(prefixes, k.Prefix)
		}
	}
	slices.Sort(prefixes)
	out := []KeyspaceDiff{}
	for _, p := range slices.Compact(prefixes) {
		out = append(out, compareKeyspace(p, a, b))
	}
	return out
}

func compareKeyspace(prefix string, a, b side) KeyspaceDiff {
	ka, kb := a.keyspace(prefix), b.keyspace(prefix)
	d := KeyspaceDiff{Prefix: prefix, InFrom: a.keyspaces[prefix] != nil, InTo: b.keyspaces[prefix] != nil}
	if ka != nil {
		d.ObjectsFrom, d.NamespacesFrom = ptr(ka.Objects), ptr(ka.Namespaces)
	}
	if kb != nil {
		d.ObjectsTo, d.NamespacesTo = ptr(kb.Objects), ptr(kb.Namespaces)
	}
	var names []string
	for _, k := range []*driverv1alpha1.KeyspaceManifest{ka, kb} {
		if k != nil {
			for _, r := range k.Resources {
				names = append(names, r.Name)
			}
		}
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		d.Resources = append(d.Resources, change(n, a.resource(ka, n), b.resource(kb, n)))
	}
	sortChanges(d.Resources)
	na, wholeA := a.names(ka)
	nb, wholeB := b.names(kb)
	if !wholeA || !wholeB {
		d.NamespaceNamesUnknown = true
		return d
	}
	d.NamespacesOnlyInFrom, d.NamespacesOnlyInTo = minus(na, nb), minus(nb, na)
	return d
}

// Changes are d's resources whose count changed or is unknown.
func (d KeyspaceDiff) Changes() []ResourceChange {
	var out []ResourceChange
	for _, c := range d.Resources {
		if c.Delta == nil || *c.Delta != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Totals compares from and to over all their keyspaces taken together:
// each resource's objects summed over the keyspaces, and the namespace
// names of all of them. A side's total is known only when every keyspace
// it holds is known and lists the resource or proves it absent.
type Totals struct {
	// Resources are the resources either side lists, largest change
	// first and unknown ones last, unchanged ones included.
	Resources []ResourceChange
	// NamespacesOnlyInFrom and NamespacesOnlyInTo are sorted.
	NamespacesOnlyInFrom, NamespacesOnlyInTo []string
	// NamespaceNamesUnknown: a side does not name all its namespaces.
	NamespaceNamesUnknown bool
}

// CompareTotals compares from and to over all their keyspaces.
func CompareTotals(from, to *driverv1alpha1.BackupManifest) Totals {
	a, b := sideOf(from), sideOf(to)
	var names []string
	for _, m := range []*driverv1alpha1.BackupManifest{from, to} {
		for _, k := range m.Keyspaces {
			for _, r := range k.Resources {
				names = append(names, r.Name)
			}
		}
	}
	slices.Sort(names)
	var t Totals
	for _, n := range slices.Compact(names) {
		t.Resources = append(t.Resources, change(n, a.total(n), b.total(n)))
	}
	sortChanges(t.Resources)
	na, wholeA := a.allNames()
	nb, wholeB := b.allNames()
	if !wholeA || !wholeB {
		t.NamespaceNamesUnknown = true
		return t
	}
	t.NamespacesOnlyInFrom, t.NamespacesOnlyInTo = minus(na, nb), minus(nb, na)
	return t
}

// total is resource name's objects over all the keyspaces of s, or nil
// when unknown.
func (s side) total(name string) *int64 {
	if !s.keyspacesWhole {
		return nil
	}
	var n int64
	for i := range s.m.Keyspaces {
		c := s.resource(&s.m.Keyspaces[i], name)
		if c == nil {
			return nil
		}
		n += *c
	}
	return &n
}

// allNames are the namespace names of every keyspace of s, sorted, and
// whether they are all of them.
func (s side) allNames() ([]string, bool) {
	if !s.keyspacesWhole {
		return nil, false
	}
	var out []string
	for i := range s.m.Keyspaces {
		names, whole := s.names(&s.m.Keyspaces[i])
		if !whole {
			return nil, false
		}
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

func change(name string, from, to *int64) ResourceChange {
	c := ResourceChange{Name: name, From: from, To: to}
	if from != nil && to != nil {
		c.Delta = ptr(*to - *from)
	}
	return c
}

// sortChanges orders changes largest first, unknown ones last, then by
// name.
func sortChanges(cs []ResourceChange) {
	size := func(c ResourceChange) int64 {
		if c.Delta == nil {
			return -1
		}
		return max(*c.Delta, -*c.Delta)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if x, y := size(cs[i]), size(cs[j]); x != y {
			return x > y
		}
		return cs[i].Name < cs[j].Name
	})
}

// minus is the members of a not in b, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
