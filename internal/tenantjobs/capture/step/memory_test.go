package step

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// captureBound is the most the capture holds at the defaults, as
// doc.go states it: the segment being built (SegmentBytes plus one
// revision), one revision being received, three watch messages and the
// two gRPC windows.
const captureBound = capture.DefaultSegmentBytes + 2*16<<20 + 3*MaxMessageBytes + 2*windowBytes

// An etcd written with what a hostile tenant can write (values of etcd's
// largest request that do not compress, 30,000 small keys deleted in one
// revision, 5,000 keys of one lease revoked at once: 120 MB in all)
// while the capture follows it with uploads slower than the etcd sends
// (200 ms a request): the live heap stays within captureBound above where
// it started (the writer's own buffers counted too), and the chain holds
// every revision.
func TestMemoryStaysBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t, "--quota-backend-bytes=4294967296")
	s3URL := startS3(t)
	slow := delayed(t, s3URL, 200*time.Millisecond)
	b, _ := base(ctx, t, cli)
	ref := watchReference(ctx, t, cli, b.Revision+1)

	o := options(etcdURL, slow, b, t.TempDir())
	o.SegmentInterval, o.SegmentBytes = capture.DefaultSegmentInterval, capture.DefaultSegmentBytes
	c, err := newCapturer(o, env, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cli.Close()
	var received atomic.Int64
	c.received = func(rev int64) { received.Store(rev) }

	runtime.GC()
	start := liveHeap()
	var peak atomic.Uint64
	sampling, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sampling.Err() == nil {
			if v := liveHeap(); v > peak.Load() {
				peak.Store(v)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.run(cctx) }()
	hostile(ctx, t, cli)
	final := revision(ctx, t, cli)
	for received.Load() < final {
		select {
		case err := <-done:
			t.Fatalf("the capture ended at revision %d of %d: %v", received.Load(), final, err)
		case <-ctx.Done():
			t.Fatalf("the capture received up to revision %d of %d", received.Load(), final)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stopSampling()
	wg.Wait()
	grew := int64(peak.Load()) - int64(start)
	t.Logf("live heap %d MiB before, peak %d MiB: %d MiB for the capture (bound %d MiB)", start>>20, peak.Load()>>20, grew>>20, captureBound>>20)
	if grew > captureBound {
		t.Fatalf("the capture's live heap grew by %d MiB, above its bound of %d MiB", grew>>20, captureBound>>20)
	}
	_, got := chainRevisions(ctx, t, storeOf(t, options(etcdURL, s3URL, b, t.TempDir())))
	sameChanges(t, got, ref.upTo(ctx, t, final))
}

// hostile writes 80 values of 1.4 MiB of random bytes, 30,000 keys
// deleted in one revision and 5,000 keys of one lease revoked at once.
func hostile(ctx context.Context, t *testing.T, cli *clientv3.Client) {
	t.Helper()
	big := make([]byte, 1400<<10)
	for i := range 80 {
		if _, err := rand.Read(big); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, key("secrets", "huge", i%10), string(big)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 35_000; i += 100 {
		ops := make([]clientv3.Op, 0, 100)
		for j := i; j < i+100; j++ {
			if j < 30_000 {
				ops = append(ops, clientv3.OpPut(key("flood", fmt.Sprintf("k%06d", j)), "v"))
			} else {
				ops = append(ops, clientv3.OpPut(key("events", fmt.Sprintf("e%06d", j)), "v", clientv3.WithLease(l.ID)))
			}
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, key("flood")+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
}

// liveHeap is the heap the last garbage collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// delayed forwards to an S3 server, each request after d.
func delayed(t *testing.T, target string, d time.Duration) string {
	return proxy(t, target, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			next.ServeHTTP(w, r)
		})
	})
}
