package manifest

import (
	"fmt"
	"strings"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// ShrinkKeyspaces removes one thing from *keyspaces, least useful first,
// so a report that carries them fits its termination message (the
// inspection's and the rehearsal's are cut the same way): the tails of
// TopNamespaces (down to 3) and Resources (down to 8) of the keyspace
// with the longest list, then whole NamespaceNames lists (never a part:
// a part would read as namespaces gone), last keyspace first, then the
// rest of those lists, then whole keyspaces from the end. It returns false
// when nothing is left to remove. The lists it cuts are copied, so the
// caller's are untouched; copy the keyspaces slice itself before.
func ShrinkKeyspaces(keyspaces *[]driverv1alpha1.KeyspaceManifest) bool {
	ks := *keyspaces
	longest := func(list func(k *driverv1alpha1.KeyspaceManifest) int, floor int) int {
		best := -1
		for i := range ks {
			if n := list(&ks[i]); n > floor && (best < 0 || n >= list(&ks[best])) {
				best = i
			}
		}
		return best
	}
	tops := func(k *driverv1alpha1.KeyspaceManifest) int { return len(k.TopNamespaces) }
	resources := func(k *driverv1alpha1.KeyspaceManifest) int { return len(k.Resources) }
	if i := longest(tops, 3); i >= 0 {
		cutTail(&ks[i], len(ks[i].TopNamespaces)-1, false)
		return true
	}
	if i := longest(resources, 8); i >= 0 {
		cutTail(&ks[i], len(ks[i].Resources)-1, true)
		return true
	}
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i].NamespaceNames != nil {
			ks[i].NamespaceNames = nil
			return true
		}
	}
	if i := longest(tops, 0); i >= 0 {
		cutTail(&ks[i], len(ks[i].TopNamespaces)-1, false)
		return true
	}
	if i := longest(resources, 0); i >= 0 {
		cutTail(&ks[i], len(ks[i].Resources)-1, true)
		return true
	}
	if len(ks) > 0 {
		*keyspaces = ks[:len(ks)-1]
		return true
	}
	return false
}

// cutTail shortens the keyspace's Resources (resources) or TopNamespaces
// to n entries, copying so the caller's manifest is untouched.
func cutTail(k *driverv1alpha1.KeyspaceManifest, n int, resources bool) {
	if resources {
		k.Resources = append([]driverv1alpha1.ObjectCount(nil), k.Resources[:n]...)
		return
	}
	k.TopNamespaces = append([]driverv1alpha1.ObjectCount(nil), k.TopNamespaces[:n]...)
}

// CheckKeyspaces refuses a list of keyspaces no Counter produces: more
// than ManifestMaxKeyspaces, or one that CheckKeyspace refuses. A report
// read from a Pod in a tenant's namespace is checked with it.
func CheckKeyspaces(ks []driverv1alpha1.KeyspaceManifest) error {
	if len(ks) > driverv1alpha1.ManifestMaxKeyspaces {
		return fmt.Errorf("%d keyspaces, more than %d", len(ks), driverv1alpha1.ManifestMaxKeyspaces)
	}
	for _, k := range ks {
		if err := CheckKeyspace(k); err != nil {
			return fmt.Errorf("keyspace %.63q: %w", k.Prefix, err)
		}
	}
	return nil
}

// CheckKeyspace refuses a keyspace no Counter produces: beyond the
// manifest's bounds, or with counts that contradict each other.
func CheckKeyspace(k driverv1alpha1.KeyspaceManifest) error {
	switch {
	case !validName(k.Prefix) || !strings.HasPrefix(k.Prefix, "/"):
		return fmt.Errorf("prefix is not a bounded path segment")
	case k.Objects < 0 || k.Namespaces < 0 || k.Namespaces > k.Objects:
		return fmt.Errorf("%d objects, %d namespaces", k.Objects, k.Namespaces)
	case len(k.Resources) > driverv1alpha1.ManifestMaxResources || len(k.TopNamespaces) > driverv1alpha1.ManifestMaxNamespaces ||
		len(k.NamespaceNames) > 2*driverv1alpha1.ManifestMaxNamespaces || int64(len(k.NamespaceNames)) > k.Namespaces:
		return fmt.Errorf("lists longer than their bounds")
	}
	for _, list := range [][]driverv1alpha1.ObjectCount{k.Resources, k.TopNamespaces} {
		for _, c := range list {
			if !validName(c.Name) || c.Count < 0 || c.Count > k.Objects {
				return fmt.Errorf("entry %.63q with count %d", c.Name, c.Count)
			}
		}
	}
	for _, n := range k.NamespaceNames {
		if !validName(n) {
			return fmt.Errorf("namespace name %.63q", n)
		}
	}
	return nil
}

func validName(s string) bool { return s != "" && len(s) <= driverv1alpha1.ManifestMaxName }
