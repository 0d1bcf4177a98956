package step

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/kubewrites"
)

// The capture's cost per change: b.N writes shaped like a Kubernetes
// control plane's (test/kubewrites) are in a real etcd (bin/etcd, its own
// process) before the capture starts; the capture then follows them all
// into S3 (the sandbox's server, in this process) at the default segment
// size. Reported: ns/op (wall time per change), cpu-ns/change (this
// process's CPU, the S3 server's included), stored-B/change (segments in
// S3). Run with -benchtime 10000x or more.
func BenchmarkCapture(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, b)
	s3URL := startS3(b)
	base, _ := base(ctx, b, cli)
	if err := kubewrites.Apply(ctx, cli, kubewrites.Writes(1, b.N)); err != nil {
		b.Fatal(err)
	}
	final := revision(ctx, b, cli)
	o := options(etcdURL, s3URL, base, b.TempDir())
	o.SegmentInterval, o.SegmentBytes = capture.DefaultSegmentInterval, capture.DefaultSegmentBytes
	c, err := newCapturer(o, env, &syncBuffer{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.cli.Close()
	var received atomic.Int64
	c.received = func(rev int64) { received.Store(rev) }

	cpu0 := cpuTime()
	b.ResetTimer()
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.run(cctx) }()
	for received.Load() < final {
		select {
		case err := <-done:
			b.Fatalf("the capture ended at %d of %d: %v", received.Load(), final, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/change")
	idx, err := storeOf(b, o).ReadIndex(ctx)
	if err != nil {
		b.Fatal(err)
	}
	chain, err := storeOf(b, o).Fetch(ctx, idx, func(changelog.Header) bool { return true }, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var stored int64
	for _, s := range chain.Segments {
		stored += s.Size
	}
	b.ReportMetric(float64(stored)/float64(final-base.Revision), "stored-B/change")
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
