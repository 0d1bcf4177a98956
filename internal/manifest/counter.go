package manifest

import (
	"bytes"
	"errors"
	"fmt"
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
// never keeps the keys themselves, and keeps every name cut to the
// manifest's bound (ManifestMaxName) as it is added: a key of any length
// costs at most that much (two names that share their first
// ManifestMaxName bytes count as one; Kubernetes' own names are shorter).
//
// What it keeps grows with the distinct prefixes and candidates it meets,
// which whoever wrote the etcd decides. A Counter of NewBoundedCounter
// stops keeping more than its Limits and says so (Err); the driver counts
// a tenant's live etcd with one.
type Counter struct {
	keys      int64
	keyspaces map[string]*keyspaceCount
	// names holds one copy of each name kept: a namespace's name recurs
	// in every resource's candidate.
	names  map[string]string
	limits Limits
	// entries counts the keyspaces and candidates kept, against limits.
	entries int
	err     error
}

// Limits bound what a Counter keeps; zero means no bound.
type Limits struct {
	// Keyspaces bounds the distinct first path segments (prefixes).
	Keyspaces int
	// Entries bounds the (resource, namespace candidate) pairs and
	// namespaces kept over all keyspaces.
	Entries int
}

// ErrTooMany is Err's error once a Counter met more than its Limits.
var ErrTooMany = errors.New("more distinct names than the counter keeps")

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
	// cut is true when a name of this keyspace was cut on insertion.
	cut bool
}

// NewCounter returns an empty Counter without bounds: for a snapshot read
// inside a Job of its own, whose memory bounds it.
func NewCounter() *Counter {
	return NewBoundedCounter(Limits{})
}

// NewBoundedCounter returns an empty Counter that keeps at most l.
func NewBoundedCounter(l Limits) *Counter {
	return &Counter{keyspaces: map[string]*keyspaceCount{}, names: map[string]string{}, limits: l}
}

// Keys is how many keys were added.
func (c *Counter) Keys() int64 { return c.keys }

// Err is ErrTooMany (wrapped, naming the bound) once a key needed more
// than the Counter's Limits: from then on the counts are incomplete and
// Add keeps nothing new. nil while they hold.
func (c *Counter) Err() error { return c.err }

// Add counts one live key.
func (c *Counter) Add(key []byte) {
	c.keys++
	if len(key) < 2 || key[0] != '/' || c.err != nil {
		return
	}
	prefix, rest := key, []byte(nil)
	if i := bytes.IndexByte(key[1:], '/'); i >= 0 {
		prefix, rest = key[:i+1], key[i+2:]
	}
	name, cut := c.name(prefix)
	ks := c.keyspaces[name]
	if ks == nil {
		if !c.room(c.limits.Keyspaces > 0 && len(c.keyspaces) >= c.limits.Keyspaces, "key prefixes", c.limits.Keyspaces) {
			return
		}
		ks = &keyspaceCount{namespaces: map[string]struct{}{}, candidates: map[candidate]int64{}}
		c.keyspaces[name] = ks
	}
	ks.cut = ks.cut || cut
	ks.objects++
	parts := bytes.Split(rest, []byte("/"))
	if len(parts) == 2 && string(parts[0]) == "namespaces" && len(parts[1]) > 0 {
		n, cut := c.name(parts[1])
		if _, ok := ks.namespaces[n]; !ok {
			if !c.room(c.full(), "names", c.limits.Entries) {
				return
			}
			ks.namespaces[n] = struct{}{}
			c.entries++
		}
		ks.cut = ks.cut || cut
	}
	resource, r := parts[0], parts[1:]
	if bytes.IndexByte(resource, '.') >= 0 && len(parts) >= 2 {
		resource, r = append(append(append([]byte(nil), parts[0]...), '/'), parts[1]...), parts[2:]
	}
	if len(resource) == 0 {
		return
	}
	var cand candidate
	var cuts [3]bool
	cand.resource, cuts[0] = c.name(resource)
	if n := len(r); n >= 2 {
		cand.ns, cuts[1] = c.name(r[n-2])
		cand.hasNS = true
		cand.ext, cuts[2] = c.name(bytes.Join(r[:n-2], []byte("/")))
	}
	ks.cut = ks.cut || cuts[0] || cuts[1] || cuts[2]
	if _, ok := ks.candidates[cand]; !ok {
		if !c.room(c.full(), "names", c.limits.Entries) {
			return
		}
		c.entries++
	}
	ks.candidates[cand]++
}

// full: one more entry would pass the Entries bound.
func (c *Counter) full() bool { return c.limits.Entries > 0 && c.entries >= c.limits.Entries }

// room records the Counter's error when over (a bound of what, n) is
// passed, and reports whether there is room.
func (c *Counter) room(over bool, what string, n int) bool {
	if over {
		c.err = fmt.Errorf("%w: more than %d distinct %s", ErrTooMany, n, what)
		return false
	}
	return true
}

// name is b as a name the Counter keeps: valid UTF-8 cut to
// ManifestMaxName (bounded), one shared copy of each; cut reports that it
// was cut. The copies are keyed by the name as kept, so there are no more
// of them than names in the kept entries (distinct bytes that make the
// same name, such as different invalid UTF-8, share one).
func (c *Counter) name(b []byte) (string, bool) {
	if s, ok := c.names[string(b)]; ok {
		// Only names as kept are keys: b needed no cut.
		return s, false
	}
	longer := len(b) > driverv1alpha1.ManifestMaxName+utf8.UTFMax
	if longer {
		b = b[:driverv1alpha1.ManifestMaxName+utf8.UTFMax]
	}
	s, cut := bounded(string(b))
	if kept, ok := c.names[s]; ok {
		return kept, longer || cut
	}
	c.names[s] = s
	return s, longer || cut
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
	cut, c := k.cut, false
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
