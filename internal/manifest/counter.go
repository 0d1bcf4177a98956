package manifest

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Counter classifies live etcd keys into Kubernetes keyspaces, resources
// and namespaces.
//
// A Kubernetes keyspace is a first path segment P ("/registry", or
// Kamaji's "/<namespace>_<name>") under which namespace objects
// (P/namespaces/<name>) exist. A key P/<resource>/.../<namespace>/<name>
// is namespaced when <namespace> is one of that keyspace's namespaces;
// since those are known only once every key is seen, the Counter keeps a
// count per (resource, namespace candidate) and resolves at the end. It
// never keeps the keys themselves.
type Counter struct {
	keys      int64
	keyspaces map[string]*keyspaceCount
}

// candidate is how a key could be classified once the namespaces are
// known: resource (with its API group), the parts between the resource
// and the namespace candidate (ext), and the candidate itself.
type candidate struct {
	resource string
	ext      string
	ns       string
	hasNS    bool
}

type keyspaceCount struct {
	objects    int64
	namespaces map[string]struct{}
	candidates map[candidate]int64
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{keyspaces: map[string]*keyspaceCount{}}
}

// Keys is how many keys were added.
func (c *Counter) Keys() int64 { return c.keys }

// Add counts one live key.
func (c *Counter) Add(key []byte) {
	c.keys++
	if len(key) < 2 || key[0] != '/' {
		return
	}
	prefix, rest := key, []byte(nil)
	if i := bytes.IndexByte(key[1:], '/'); i >= 0 {
		prefix, rest = key[:i+1], key[i+2:]
	}
	ks := c.keyspaces[string(prefix)]
	if ks == nil {
		ks = &keyspaceCount{namespaces: map[string]struct{}{}, candidates: map[candidate]int64{}}
		c.keyspaces[string(prefix)] = ks
	}
	ks.objects++
	parts := strings.Split(string(rest), "/")
	if len(parts) == 2 && parts[0] == "namespaces" && parts[1] != "" {
		ks.namespaces[parts[1]] = struct{}{}
	}
	resource, r := parts[0], parts[1:]
	if strings.Contains(resource, ".") && len(parts) >= 2 {
		resource, r = parts[0]+"/"+parts[1], parts[2:]
	}
	if resource == "" {
		return
	}
	cand := candidate{resource: resource}
	if n := len(r); n >= 2 {
		cand.ns, cand.hasNS = r[n-2], true
		cand.ext = strings.Join(r[:n-2], "/")
	}
	ks.candidates[cand]++
}

// Keyspaces resolves the counts into the manifest's bounded form: the
// Kubernetes keyspaces, largest first, each with its resources and top
// namespaces largest first. truncated is true when a list or a name was
// cut to the manifest's bounds.
func (c *Counter) Keyspaces() (ks []driverv1alpha1.KeyspaceManifest, truncated bool) {
	for prefix, k := range c.keyspaces {
		if len(k.namespaces) == 0 {
			continue
		}
		m, cut := k.manifest(prefix)
		truncated = truncated || cut
		ks = append(ks, m)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].Objects != ks[j].Objects {
			return ks[i].Objects > ks[j].Objects
		}
		return ks[i].Prefix < ks[j].Prefix
	})
	if len(ks) > driverv1alpha1.ManifestMaxKeyspaces {
		ks, truncated = ks[:driverv1alpha1.ManifestMaxKeyspaces], true
	}
	return ks, truncated
}

func (k *keyspaceCount) manifest(prefix string) (driverv1alpha1.KeyspaceManifest, bool) {
	var cut, c bool
	resources, namespaces := map[string]int64{}, map[string]int64{}
	for cand, n := range k.candidates {
		resource := cand.resource
		if _, ok := k.namespaces[cand.ns]; cand.hasNS && ok {
			if cand.ext != "" {
				resource += "/" + cand.ext
			}
			ns, c := bounded(cand.ns)
			cut = cut || c
			namespaces[ns] += n
		}
		resource, c = bounded(resource)
		cut = cut || c
		resources[resource] += n
	}
	m := driverv1alpha1.KeyspaceManifest{Objects: k.objects, Namespaces: int64(len(k.namespaces))}
	m.Prefix, c = bounded(prefix)
	cut = cut || c
	m.Resources, c = top(resources, driverv1alpha1.ManifestMaxResources)
	cut = cut || c
	m.TopNamespaces, c = top(namespaces, driverv1alpha1.ManifestMaxNamespaces)
	cut = cut || c
	if len(k.namespaces) <= 2*driverv1alpha1.ManifestMaxNamespaces {
		names := map[string]struct{}{}
		for ns := range k.namespaces {
			name, c := bounded(ns)
			cut = cut || c
			names[name] = struct{}{}
		}
		for name := range names {
			m.NamespaceNames = append(m.NamespaceNames, name)
		}
		sort.Strings(m.NamespaceNames)
	}
	return m, cut
}

// bounded makes a name valid UTF-8 (a key is any bytes; JSON would
// replace invalid bytes and lengthen the name) and cuts it to
// ManifestMaxName bytes on a rune boundary.
func bounded(name string) (string, bool) {
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "\uFFFD")
	}
	if len(name) <= driverv1alpha1.ManifestMaxName {
		return name, false
	}
	n := driverv1alpha1.ManifestMaxName
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n], true
}

// top sorts counts largest first, then by name, and keeps at most n.
func top(counts map[string]int64, n int) ([]driverv1alpha1.ObjectCount, bool) {
	list := make([]driverv1alpha1.ObjectCount, 0, len(counts))
	for name, count := range counts {
		list = append(list, driverv1alpha1.ObjectCount{Name: name, Count: count})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Count != list[j].Count {
			return list[i].Count > list[j].Count
		}
		return list[i].Name < list[j].Name
	})
	if len(list) > n {
		return list[:n], true
	}
	if len(list) == 0 {
		return nil, false
	}
	return list, false
}
