package step

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkInspectFile measures what inspection costs per backup: a real
// etcd's snapshot of about 50,000 Kubernetes objects (100 namespaces, five
// resources, 300-byte values, a tenth of them overwritten once), read by
// InspectFile. It reports keys and database bytes inspected per second,
// the heap allocated per key, and the heap's peak over one more run per
// key (objects in the heap, live or not yet swept, above what it held
// before; sampled every millisecond).
func BenchmarkInspectFile(b *testing.B) { benchInspectFile(b, 100) }

// BenchmarkInspectFileLarge is BenchmarkInspectFile on four times as many
// objects (400 namespaces, about 200,000 objects; ten times as many take
// 50 s to write here).
func BenchmarkInspectFileLarge(b *testing.B) { benchInspectFile(b, 400) }

func benchInspectFile(b *testing.B, namespaces int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli := startEtcd(b)
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
	const perResource = 100
	for n := range namespaces {
		add(fmt.Sprintf("/registry/namespaces/ns-%04d", n))
		for _, r := range resources {
			for i := range perResource {
				add(fmt.Sprintf("/registry/%s/ns-%04d/obj-%03d", r, n, i))
			}
		}
	}
	for n := range namespaces / 10 {
		for _, r := range resources {
			for i := range perResource {
				add(fmt.Sprintf("/registry/%s/ns-%04d/obj-%03d", r, n, i))
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

	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		m, err := InspectFile(db)
		if err != nil {
			b.Fatal(err)
		}
		if m.Keys != want || len(m.Keyspaces) != 1 || m.Keyspaces[0].Namespaces != int64(namespaces) {
			b.Fatalf("inspected %d keys, %d keyspaces; want %d keys in one keyspace of %d namespaces", m.Keys, len(m.Keyspaces), want, namespaces)
		}
	}
	secs := time.Since(start).Seconds()
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(want)*float64(b.N)/secs, "keys/s")
	b.ReportMetric(float64(st.Size())*float64(b.N)/secs/(1<<20), "MiB/s")
	b.ReportMetric(float64(st.Size()), "db-bytes")
	b.ReportMetric(float64(want), "keys")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(want), "alloc-B/key")
	b.ReportMetric(float64(peakHeap(b, func() {
		if _, err := InspectFile(db); err != nil {
			b.Fatal(err)
		}
	}))/float64(want), "peak-heap-B/key")
}

// peakHeap is the most the heap's objects grew above their size after a
// collection while f ran, sampled every millisecond.
func peakHeap(b *testing.B, f func()) uint64 {
	b.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base, peak := read(), uint64(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if v := read(); v > base && v-base > peak {
			peak = v - base
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}
