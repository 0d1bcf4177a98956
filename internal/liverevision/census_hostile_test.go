package liverevision

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// heapBound is what one census of a hostile etcd may add to the driver's
// heap at its peak: the rehearsal's CensusSlots of them at once stay well
// under the chart's 256 Mi limit, with room for the manager's caches.
const heapBound = 24 << 20

// hostileFills are what a tenant can write into its own etcd to make a
// census costly, each far past one of the census's bounds: distinct
// first segments (the 150,000 keys of 1 KiB, here 20,000: past
// the bound of distinct prefixes, and what the unbounded Counter kept
// whole), distinct names in one keyspace (past the bound of entries:
// the most a census keeps), and keys near 1.5 MiB (one page of them is
// a reply of tens of MiB).
var hostileFills = []struct {
	name string
	fill func(tb testing.TB, cli *clientv3.Client)
}{
	{"20,000 keys of 1 KiB with distinct first segments", func(tb testing.TB, cli *clientv3.Client) {
		pad := strings.Repeat("x", 1000)
		fill(tb, cli, 20_000, 500, func(i int) string { return fmt.Sprintf("/%06d%s", i, pad) })
	}},
	{"60,000 distinct resources of 63 bytes in one keyspace", func(tb testing.TB, cli *clientv3.Client) {
		fill(tb, cli, 1, 1, func(int) string { return "/registry/namespaces/n" })
		fill(tb, cli, 60_000, 1000, func(i int) string { return fmt.Sprintf("/registry/%057d%06d/n/x", 0, i) })
	}},
	{"40 keys near 1.5 MiB", func(tb testing.TB, cli *clientv3.Client) {
		pad := strings.Repeat("y", 1400<<10)
		fill(tb, cli, 40, 1, func(i int) string { return fmt.Sprintf("/big%03d%s", i, pad) })
	}},
}

// Attack (issue 37, item 1): the tenant holds its etcd's root client
// certificate (and could point the etcd-client Service at a server of its
// own), so it decides what a census reads. Filled as above, a census read
// through the Service name the driver dials ends past a bound, with the
// live side reported unread in a fixed sentence, and adds less than
// heapBound to the heap at its peak (16–18 MiB at the most, past
// the bound of entries). Seen failing with the bounds taken out (no
// MaxCallRecvMsgSize, no Counter Limits): each fill was counted as if it
// were a cluster (no error), with 14, 25 and 159 MiB of heap at the peak.
func TestCensusOfAHostileEtcdStaysBounded(t *testing.T) {
	for _, tc := range hostileFills {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := hostileEtcd(t, tc.fill)
			var err error
			peak := peakHeap(func() { _, err = r.Census(context.Background(), ns) })
			t.Logf("census: heap %.1f MiB above the start at its peak; %v", float64(peak)/(1<<20), err)
			g.Expect(err).To(HaveOccurred(), "a census past its bounds is not a count")
			g.Expect(IsTooLarge(err)).To(BeTrue(), "%v", err)
			g.Expect(TenantMessage(err)).To(HavePrefix("the live cluster is too large for the driver to count"))
			g.Expect(peak).To(BeNumerically("<", heapBound), "the census's heap at its peak")
		})
	}
}

// BenchmarkHostileCensusHeap is the driver's heap during a census of
// each hostile etcd above: the most it rose above where it started
// (peak-heap-MiB), against the chart's 256 Mi limit.
func BenchmarkHostileCensusHeap(b *testing.B) {
	for _, tc := range hostileFills {
		b.Run(tc.name, func(b *testing.B) {
			r := hostileEtcd(b, tc.fill)
			var most uint64
			b.ResetTimer()
			for range b.N {
				var err error
				most = max(most, peakHeap(func() { _, err = r.Census(context.Background(), ns) }))
				if !IsTooLarge(err) {
					b.Fatalf("census: %v", err)
				}
			}
			b.ReportMetric(float64(most)/(1<<20), "peak-heap-MiB")
		})
	}
}

// hostileEtcd starts the tenant's etcd (real, TLS, the chart's client
// certificate), fills it and returns the driver's Reader of it.
func hostileEtcd(tb testing.TB, fillIt func(testing.TB, *clientv3.Client)) Reader {
	tb.Helper()
	p := newPKI(tb, ServiceHost(ns), "etcd-client."+ns+".svc.cluster.local")
	addr := startTLSEtcd(tb, p, "--max-txn-ops=1000", "--unsafe-no-fsync", "--quota-backend-bytes=1073741824")
	var mu sync.Mutex
	var dialled []string
	dial := serviceTo(addr, &dialled)
	r := Reader{Secrets: secrets(clientSecret(p)), Policy: loopback(tb), Dial: func(ctx context.Context, network, a string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		return dial(ctx, network, a)
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := r.Revision(context.Background(), ns)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the tenant's etcd did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fillIt(tb, tenantClient(tb, r))
	return r
}

// tenantClient is a client of the tenant's own, through the Service name
// with the chart's client certificate: what the tenant fills its etcd
// with.
func tenantClient(tb testing.TB, r Reader) *clientv3.Client {
	tb.Helper()
	cfg, err := r.tlsConfig(context.Background(), ns)
	if err != nil {
		tb.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + serviceAddr}, TLS: cfg, Logger: zap.NewNop(), DialTimeout: 5 * time.Second,
		MaxCallSendMsgSize: 2 << 20,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return r.Dial(ctx, "tcp", a)
		})}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}

// fill puts n keys named key(i) in transactions of batch, four at once.
func fill(tb testing.TB, cli *clientv3.Client, n, batch int, key func(int) string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				from := int(next.Add(int64(batch))) - batch
				if from >= n {
					errs <- nil
					return
				}
				var ops []clientv3.Op
				for i := from; i < min(from+batch, n); i++ {
					ops = append(ops, clientv3.OpPut(key(i), ""))
				}
				if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
}

// peakHeap runs f and returns the most its heap in use rose above where
// it started, sampled every few milliseconds while f runs.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
				peak.Store(m.HeapInuse - base)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-sampled
	return peak.Load()
}
