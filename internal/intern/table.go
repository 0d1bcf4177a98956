// Package intern shares one copy of each repeated string among the
// objects the driver caches. Ten thousand Backups of a thousand tenants
// repeat the same namespace, bucket, endpoint and destination in every
// copy: decoded from JSON each is a separate allocation, together about a
// third of a cached Backup. A Table hands out one shared copy instead.
//
// Strings are immutable, so sharing them is always safe. Shared byte
// slices (Bytes) are safe only because cached objects are never written
// to: the cache hands out deep copies.
//
// A Table holds its copies weakly: a value stays in it only while some
// object still holds that value. Most shared values are written by
// tenants (a Backup's driverMetadata and status are theirs to edit), so a
// table that kept what it saw would let a tenant pin memory by creating
// and deleting objects with large unique values; this one costs nothing
// once the objects are gone. Strings the driver defines (its keys,
// finalizers, kinds) need no table: callers hand out the constant itself.
package intern

import (
	"hash/maphash"
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// minSweep is the fewest entries at which a Table looks for dead ones.
const minSweep = 1024

// Table holds the shared copies. The zero value is ready to use.
type Table struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[uint64]entry
	// sweepAt is the entry count at which dead entries are dropped next:
	// twice the live count of the last sweep, so sweeping costs O(1) per
	// insert and dead entries never outnumber live ones twice over.
	sweepAt int
	// peak is the most entries the map held since it was last rebuilt
	// (a Go map never gives back its buckets).
	peak int
}

// entry is a weak reference to a shared copy of n bytes.
type entry struct {
	p weak.Pointer[byte]
	n int
}

// New returns an empty Table.
func New() *Table { return &Table{} }

// String returns the shared copy of s.
func (t *Table) String(s string) string {
	if s == "" {
		return s
	}
	p := t.share(unsafe.StringData(s), len(s), func() *byte { return unsafe.StringData(strings.Clone(s)) })
	return unsafe.String(p, len(s))
}

// Bytes returns the shared copy of b. The result must never be written to.
func (t *Table) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	p := t.share(&b[0], len(b), func() *byte {
		c := make([]byte, len(b))
		copy(c, b)
		return &c[0]
	})
	return unsafe.Slice(p, len(b))
}

// share returns the shared copy of the n bytes at p, making one with
// clone when there is none. The copy is always the Table's own heap
// allocation (weak pointers need one; a caller's string may be a
// constant).
func (t *Table) share(p *byte, n int, clone func() *byte) *byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.seed, t.entries, t.sweepAt = maphash.MakeSeed(), map[uint64]entry{}, minSweep
	}
	in := unsafe.String(p, n)
	h := maphash.String(t.seed, in)
	if e, ok := t.entries[h]; ok {
		if c := e.p.Value(); c != nil {
			if e.n == n && unsafe.String(c, n) == in {
				return c
			}
			return p // a 64-bit collision: not shared, still correct
		}
	}
	c := clone()
	t.entries[h] = entry{p: weak.Make(c), n: n}
	t.peak = max(t.peak, len(t.entries))
	if len(t.entries) >= t.sweepAt {
		t.sweep()
	}
	return c
}

// sweep drops the entries whose copy no object holds any more, and
// rebuilds the map when it is mostly empty so its buckets are freed too.
func (t *Table) sweep() {
	for h, e := range t.entries {
		if e.p.Value() == nil {
			delete(t.entries, h)
		}
	}
	if len(t.entries) < t.peak/4 {
		fresh := make(map[uint64]entry, len(t.entries))
		for h, e := range t.entries {
			fresh[h] = e
		}
		t.entries, t.peak = fresh, len(fresh)
	}
	t.sweepAt = max(minSweep, 2*len(t.entries))
}

// Len drops the dead entries and reports how many copies t shares.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		return 0
	}
	t.sweep()
	return len(t.entries)
}
