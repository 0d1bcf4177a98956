package snapshotinspect

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkInspectFile measures what inspection costs per backup: a real
// etcd's snapshot of about 50,000 Kubernetes objects (100 namespaces, five
// resources, 300-byte values, a tenth of them overwritten once), read by
// InspectFile. It reports keys and database bytes inspected per second.
func BenchmarkInspectFile(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli := startEtcd(ctx, b)
	value := strings.Repeat("x", 300)
	resources := []string{"pods", "configmaps", "secrets", "services/specs", "apps/deployments"}
	var ops []clientv3.Op
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	add := func(k string) {
		ops = append(ops, clientv3.OpPut(k, value))
		if len(ops) == 100 {
			flush()
		}
	}
	const namespaces, perResource = 100, 100
	for n := range namespaces {
		add(fmt.Sprintf("/registry/namespaces/ns-%03d", n))
		for _, r := range resources {
			for i := range perResource {
				add(fmt.Sprintf("/registry/%s/ns-%03d/obj-%03d", r, n, i))
			}
		}
	}
	for n := range namespaces / 10 {
		for _, r := range resources {
			for i := range perResource {
				add(fmt.Sprintf("/registry/%s/ns-%03d/obj-%03d", r, n, i))
			}
		}
	}
	flush()
	db := saveDatabase(ctx, b, cli, b.TempDir())
	st, err := os.Stat(db)
	if err != nil {
		b.Fatal(err)
	}
	want := int64(namespaces + namespaces*len(resources)*perResource)

	b.ResetTimer()
	start := time.Now()
	for range b.N {
		m, err := InspectFile(db)
		if err != nil {
			b.Fatal(err)
		}
		if m.Keys != want || len(m.Keyspaces) != 1 || m.Keyspaces[0].Namespaces != namespaces {
			b.Fatalf("inspected %d keys, %d keyspaces; want %d keys in one keyspace of %d namespaces", m.Keys, len(m.Keyspaces), want, namespaces)
		}
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(want)*float64(b.N)/secs, "keys/s")
	b.ReportMetric(float64(st.Size())*float64(b.N)/secs, "bytes/s")
	b.ReportMetric(float64(st.Size()), "db-bytes")
}
