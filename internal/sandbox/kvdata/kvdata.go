// Package kvdata writes and checks deterministic key sets in an etcd
// cluster: key i under a prefix holds a value derived from a generation
// string and i, so a check needs nothing but the same three parameters. The
// demo and the end-to-end test use it to prove a restore brought back
// exactly the data that was backed up.
package kvdata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// batch is how many puts go in one transaction (etcd's default
// --max-txn-ops is 128).
const batch = 100

// Set describes n keys <prefix>/<i> with values of size bytes, generation gen.
type Set struct {
	Prefix string
	N      int
	Size   int
	Gen    string
}

// Key is the i-th key.
func (s Set) Key(i int) string { return fmt.Sprintf("%s/%08d", s.Prefix, i) }

// Value is the i-th value.
func (s Set) Value(i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", s.Gen, i)))
	unit := s.Gen + ":" + hex.EncodeToString(sum[:]) + ";"
	return strings.Repeat(unit, s.Size/len(unit)+1)[:s.Size]
}

// Write puts every key of s.
func (s Set) Write(ctx context.Context, c *clientv3.Client) error {
	for start := 0; start < s.N; start += batch {
		var ops []clientv3.Op
		for i := start; i < start+batch && i < s.N; i++ {
			ops = append(ops, clientv3.OpPut(s.Key(i), s.Value(i)))
		}
		if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("write keys %d..%d: %w", start, start+len(ops)-1, err)
		}
	}
	return nil
}

// Check reads every key under the prefix and fails on the first missing,
// extra or different one.
func (s Set) Check(ctx context.Context, c *clientv3.Client) error {
	seen := 0
	from := s.Prefix + "/"
	end := clientv3.GetPrefixRangeEnd(from)
	for {
		resp, err := c.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(1000), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return fmt.Errorf("read keys from %q: %w", from, err)
		}
		for _, kv := range resp.Kvs {
			if seen >= s.N {
				return fmt.Errorf("unexpected extra key %q", kv.Key)
			}
			if string(kv.Key) != s.Key(seen) {
				return fmt.Errorf("key %q missing (found %q instead)", s.Key(seen), kv.Key)
			}
			if string(kv.Value) != s.Value(seen) {
				return fmt.Errorf("key %q holds a value of another generation (want generation %q)", kv.Key, s.Gen)
			}
			seen++
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if seen != s.N {
		return fmt.Errorf("found %d keys under %s/, want %d", seen, s.Prefix, s.N)
	}
	return nil
}
