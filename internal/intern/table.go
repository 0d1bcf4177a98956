// Package intern shares one copy of each repeated string among the
// objects the driver caches. Ten thousand Backups of a thousand tenants
// repeat the same label and driverMetadata keys, the same namespace,
// bucket, endpoint and condition message in every copy: decoded from
// JSON each is a separate allocation, together about a third of a cached
// Backup. A Table hands out one shared copy instead.
//
// Strings are immutable, so sharing them is always safe. Shared byte
// slices (Bytes) are safe only because cached objects are never written
// to: the cache hands out deep copies.
//
// A Table only grows, up to its limit; past it, it returns what it is
// given (no sharing, no error). Callers intern only values of few
// distinct contents (keys the driver defines, namespaces, names of
// classes and strategies), never UIDs or signatures, so the limit is
// reached only by a namespace that writes many distinct values on
// purpose, and then costs what not interning costs.
package intern

import "sync"

// DefaultLimit bounds a Table: 64 Ki entries, a few MiB at most.
const DefaultLimit = 1 << 16

// Table holds the shared copies. The zero value is not usable; use New.
type Table struct {
	mu    sync.Mutex
	strs  map[string]string
	bytes map[string][]byte
	limit int
}

// New returns a Table of at most limit strings and limit byte slices.
func New(limit int) *Table {
	return &Table{strs: map[string]string{}, bytes: map[string][]byte{}, limit: limit}
}

// String returns the shared copy of s.
func (t *Table) String(s string) string {
	if s == "" {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.strs[s]; ok {
		return c
	}
	if len(t.strs) < t.limit {
		t.strs[s] = s
	}
	return s
}

// Bytes returns the shared copy of b. The result must never be written to.
func (t *Table) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.bytes[string(b)]; ok {
		return c
	}
	if len(t.bytes) < t.limit {
		t.bytes[string(b)] = b
	}
	return b
}

// Len reports how many strings and byte slices t shares.
func (t *Table) Len() (strs, bytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.strs), len(t.bytes)
}
