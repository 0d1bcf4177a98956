package keywalk

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Walk reads every key across pages, in key order, at one revision: keys
// written after that revision are not seen, keys deleted after it are.
func TestWalkReadsEveryKeyAtOneRevision(t *testing.T) {
	cli, _ := testenv.StartEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 2*PageSize + 7
	for batch := 0; batch < n; batch += 100 {
		var ops []clientv3.Op
		for i := batch; i < min(batch+100, n); i++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/k/%05d", i), "v"))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	then, err := cli.Get(ctx, "/k/00000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/later", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/k/00000"); err != nil {
		t.Fatal(err)
	}

	var keys []string
	rev, err := Walk(ctx, cli, then.Header.Revision, func(k []byte) error { keys = append(keys, string(k)); return nil })
	if err != nil || rev != then.Header.Revision {
		t.Fatalf("walk at %d: revision %d, %v", then.Header.Revision, rev, err)
	}
	if len(keys) != n || keys[0] != "/k/00000" || keys[n-1] != fmt.Sprintf("/k/%05d", n-1) {
		t.Fatalf("%d keys from %q to %q, want %d from /k/00000", len(keys), keys[0], keys[len(keys)-1], n)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys out of order: %q before %q", keys[i-1], keys[i])
		}
	}

	keys = nil
	rev, err = Walk(ctx, cli, 0, func(k []byte) error { keys = append(keys, string(k)); return nil })
	if err != nil || rev <= then.Header.Revision || len(keys) != n || keys[0] != "/k/00001" || keys[n-1] != "/later" {
		t.Fatalf("walk now: revision %d, %d keys from %q to %q, %v", rev, len(keys), keys[0], keys[len(keys)-1], err)
	}
}
