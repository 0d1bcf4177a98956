package manifest

import (
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// The one rule for an entry a list does not hold, for every comparison of
// two manifests (the content-drop guard, the rehearsal's report, ebdctl
// diff): it is absent, a zero, only when the list is whole; missing from a
// list that was cut (to the manifest's bounds by the Counter, or to fit a
// report's 4,000 bytes by ShrinkKeyspaces) it is unknown. A list is whole
// when nothing of its manifest was cut (Truncated false), or when its own
// counts prove it: the keyspaces it lists hold every key, the resources a
// keyspace lists every one of its objects. Each missing entry would have
// held at least one, so nothing can be missing. Namespace names are listed
// all or none, so they are whole when there are as many as namespaces.

// keyspacesWhole reports whether m lists every Kubernetes keyspace it
// holds.
func keyspacesWhole(m *driverv1alpha1.BackupManifest) bool {
	return addsUp(m, m.Keys, len(m.Keyspaces), func(i int) int64 { return m.Keyspaces[i].Objects })
}

// resourcesWhole reports whether k, a keyspace m lists, lists every
// resource it holds.
func resourcesWhole(m *driverv1alpha1.BackupManifest, k *driverv1alpha1.KeyspaceManifest) bool {
	return addsUp(m, k.Objects, len(k.Resources), func(i int) int64 { return k.Resources[i].Count })
}

// addsUp reports whether a list of m with n entries, the ith counting
// count(i), is whole: nothing of m was cut, or its counts add up to total.
func addsUp(m *driverv1alpha1.BackupManifest, total int64, n int, count func(i int) int64) bool {
	if !m.Truncated {
		return true
	}
	var sum int64
	for i := range n {
		sum += count(i)
	}
	return sum == total
}

// namesWhole reports whether k names every namespace it holds.
func namesWhole(k *driverv1alpha1.KeyspaceManifest) bool {
	return int64(len(k.NamespaceNames)) == k.Namespaces
}

// side is one manifest as a comparison reads it: what it lists, and what
// its lists prove absent.
type side struct {
	m              *driverv1alpha1.BackupManifest
	keyspaces      map[string]*driverv1alpha1.KeyspaceManifest
	keyspacesWhole bool
}

func sideOf(m *driverv1alpha1.BackupManifest) side {
	s := side{m: m, keyspaces: map[string]*driverv1alpha1.KeyspaceManifest{}, keyspacesWhole: keyspacesWhole(m)}
	for i := range m.Keyspaces {
		s.keyspaces[m.Keyspaces[i].Prefix] = &m.Keyspaces[i]
	}
	return s
}

// keyspace is the keyspace of prefix, an empty one when the manifest's
// list proves it absent, or nil when it is unknown.
func (s side) keyspace(prefix string) *driverv1alpha1.KeyspaceManifest {
	if k := s.keyspaces[prefix]; k != nil {
		return k
	}
	if s.keyspacesWhole {
		return &driverv1alpha1.KeyspaceManifest{Prefix: prefix}
	}
	return nil
}

// resource is how many objects of resource name keyspace k holds, or nil
// when that is unknown (k is nil, or its list was cut and lacks name).
func (s side) resource(k *driverv1alpha1.KeyspaceManifest, name string) *int64 {
	if k == nil {
		return nil
	}
	for _, r := range k.Resources {
		if r.Name == name {
			return ptr(r.Count)
		}
	}
	if resourcesWhole(s.m, k) {
		return ptr(int64(0))
	}
	return nil
}

// names are k's namespace names, and whether they are all of them.
func (s side) names(k *driverv1alpha1.KeyspaceManifest) ([]string, bool) {
	if k == nil || !namesWhole(k) {
		return nil, false
	}
	return k.NamespaceNames, true
}

func ptr[T any](v T) *T { return &v }
