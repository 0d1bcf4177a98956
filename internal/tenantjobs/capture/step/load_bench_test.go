package step

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/kubewrites"
)

// The load of issue 39: loadTenants tenants, each with its own etcd
// (bin/etcd) and its own capture (bin/etcd-stage capture, a process as
// in its Pod, default segment interval and size), all writing to one S3
// server (the sandbox's, in this process) while each tenant's writer
// makes loadRate changes a second shaped like a Kubernetes control
// plane's (test/kubewrites), for loadFor.
const (
	loadTenants = 100
	loadRate    = 10
	loadFor     = 75 * time.Second
)

// BenchmarkCaptureLoad reports, over that load (run it with -benchtime
// 1x): the lag from a commit (its writer's Put returned, with the
// revision) to its being durable (the PUT of an index naming that
// revision or a later one completed: a restarted capture resumes after
// the index's newest revision, so before that a restart would write the
// change again, after it never loses it), p50, p99 and the worst, and
// two parts of it: from the commit to the capture having it whole (its
// receive time in the segment; p99) and from when a segment was due (its
// first change's receive time and the segment interval) to its index
// durable (p50, p99), and the S3 server's time for a PUT (p50, p99); the
// connections the captures opened to S3 per request; the changes a
// second actually made; the bytes in
// S3 (segments and index) per change; and per capture process its CPU
// (% of a core) and its memory at the end of the load (anonymous: its
// own; resident: with the binary's pages, which captures on one node
// share) and the largest peak of one. For the machine's budget, the CPU
// of the etcds and of this process (the writers, the S3 server) too.
func BenchmarkCaptureLoad(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s3 := startWatchedS3(b)
	ts := startTenantEtcds(ctx, b, loadTenants)
	writes := make([][]kubewrites.Write, len(ts))
	bases := make([]int64, len(ts))
	for i, t := range ts {
		if err := kubewrites.Apply(ctx, t.cli, kubewrites.Writes(uint64(i), 100)); err != nil {
			b.Fatal(err)
		}
		bs, _ := base(ctx, b, t.cli)
		dir := b.TempDir()
		s3.follow(b, t, i, bs, dir)
		t.startCaptureProcess(b, dir)
		writes[i], bases[i] = kubewrites.Writes(uint64(1000+i), 11*loadRate*int(loadFor/time.Second)/10), bs.Revision
	}
	// The captures started last are still connecting: their start is
	// not what a capture costs while it runs.
	time.Sleep(2 * time.Second)
	load0, _ := os.ReadFile("/proc/loadavg")
	cpu0, _ := captureStats(b, ts)
	etcd0, self0 := etcdCPU(b, ts), cpuTime()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var made atomic.Int64
	errs := make(chan error, len(ts))
	for i, t := range ts {
		wg.Go(func() {
			// The writers' ticks spread over the interval.
			time.Sleep(time.Duration(i) * time.Second / loadRate / loadTenants)
			n, err := t.write(ctx, writes[i], start.Add(loadFor))
			if made.Add(int64(n)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, mem := captureStats(b, ts)
	etcd1, self1 := etcdCPU(b, ts), cpuTime()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	for _, t := range ts {
		t.awaitDurable(ctx, b)
	}
	b.StopTimer()
	load1, _ := os.ReadFile("/proc/loadavg")
	stopCaptures(b, ts)

	var lags, watching, sealing []time.Duration
	var changes, segments int64
	for i, t := range ts {
		received := t.received(ctx, b)
		for _, c := range t.commits {
			at, _ := t.durableAfter(c.rev)
			got, ok := received[c.rev]
			if !ok {
				b.Fatalf("revision %d of %s is not in its chain", c.rev, t.o.Prefix)
			}
			lags, watching = append(lags, at.Sub(c.at)), append(watching, got.Sub(c.at))
		}
		sealing = append(sealing, t.sealing...)
		idx, err := t.store.ReadIndex(ctx)
		if err != nil {
			b.Fatal(err)
		}
		changes += idx.Newest.Revision - bases[i]
		segments += idx.Segments
	}
	n := float64(len(ts))
	b.ReportMetric(n, "tenants")
	b.ReportMetric(float64(len(lags))/elapsed.Seconds(), "changes/s")
	b.ReportMetric(quantile(lags, 50), "lag-p50-s")
	b.ReportMetric(quantile(lags, 99), "lag-p99-s")
	b.ReportMetric(quantile(lags, 100), "lag-max-s")
	b.ReportMetric(quantile(watching, 99), "watch-p99-s")
	b.ReportMetric(quantile(sealing, 50), "seal-p50-s")
	b.ReportMetric(quantile(sealing, 99), "seal-p99-s")
	b.ReportMetric(quantile(s3.puts, 50), "s3-put-p50-s")
	b.ReportMetric(quantile(s3.puts, 99), "s3-put-p99-s")
	b.ReportMetric(float64(segments)/n, "segments/tenant")
	b.ReportMetric(float64(s3.conns.Load())/float64(s3.requests.Load()), "s3-conns/request")
	b.ReportMetric(float64(s3.storedBytes(b))/float64(changes), "stored-B/change")
	b.ReportMetric(100*(cpu1-cpu0).Seconds()/elapsed.Seconds()/n, "cpu-%core/capture")
	b.ReportMetric((etcd1-etcd0).Seconds()/elapsed.Seconds(), "etcds-cores")
	b.ReportMetric((self1-self0).Seconds()/elapsed.Seconds(), "writers+S3-cores")
	b.ReportMetric(float64(mem.anon)/n/(1<<20), "anon-MiB/capture")
	b.ReportMetric(float64(mem.rss)/n/(1<<20), "rss-MiB/capture")
	b.ReportMetric(float64(mem.peak)/(1<<20), "max-peak-rss-MiB")
	b.Logf("%d writes, %d changes (a delete of a key not there is none) in %s; load average before %s and after %s",
		made.Load(), len(lags), elapsed.Round(time.Millisecond), load0, load1)
	if len(s3.failed) > 0 {
		b.Logf("the proxy could not pass on %d requests (the captures retried them): %q", len(s3.failed), s3.failed)
	}
}

// quantile is the qth percentile of ds, in seconds (it sorts ds).
func quantile(ds []time.Duration, q int) float64 {
	slices.Sort(ds)
	return ds[min(len(ds)*q/100, len(ds)-1)].Seconds()
}

// write makes ws until then, noting each commit, loadRate changes a
// second: the nth change at start + n/loadRate s (at once when behind,
// so a slow write is caught up; a delete of a key not there changes
// nothing and takes no turn). It returns how many writes it made.
func (t *loadTenant) write(ctx context.Context, ws []kubewrites.Write, until time.Time) (int, error) {
	x := kubewrites.NewWriter(t.cli)
	start := time.Now()
	i := 0
	for ; ; i++ {
		at := start.Add(time.Duration(len(t.commits)) * time.Second / loadRate)
		if !at.Before(until) {
			return i, nil
		}
		time.Sleep(time.Until(at))
		rev, err := x.Write(ctx, ws[i%len(ws)])
		if err != nil {
			return i, err
		}
		if rev > 0 {
			t.mu.Lock()
			t.commits = append(t.commits, point{rev, time.Now()})
			t.mu.Unlock()
		}
	}
}

// awaitDurable waits until t's last commit is durable.
func (t *loadTenant) awaitDurable(ctx context.Context, b *testing.B) {
	b.Helper()
	last := t.commits[len(t.commits)-1].rev
	for {
		if _, ok := t.durableAfter(last); ok {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("revision %d of %s never became durable", last, t.o.Prefix)
		case err := <-t.exited:
			t.exited <- err
			log, _ := os.ReadFile(filepath.Join(filepath.Dir(t.o.TerminationLog), "capture.log"))
			b.Fatalf("the capture of %s ended (%v) before revision %d was durable:\n%s", t.o.Prefix, err, last, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// captureStats sums the captures' CPU time and memory, but for the
// peak: the largest of one.
func captureStats(b *testing.B, ts []*loadTenant) (cpu time.Duration, sum procMem) {
	b.Helper()
	for _, t := range ts {
		c, m, err := procStat(t.capture.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		cpu += c
		sum = procMem{rss: sum.rss + m.rss, anon: sum.anon + m.anon, peak: max(sum.peak, m.peak)}
	}
	return cpu, sum
}

// etcdCPU sums the tenants' etcds' CPU time.
func etcdCPU(b *testing.B, ts []*loadTenant) (cpu time.Duration) {
	b.Helper()
	for _, t := range ts {
		c, _, err := procStat(t.etcd.Pid())
		if err != nil {
			b.Fatal(err)
		}
		cpu += c
	}
	return cpu
}

// stopCaptures ends every capture as SIGTERM does and expects each to
// exit 0 (Stopped).
func stopCaptures(b *testing.B, ts []*loadTenant) {
	b.Helper()
	for _, t := range ts {
		_ = t.capture.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	for _, t := range ts {
		if err := <-t.exited; err != nil {
			errs = append(errs, err)
		}
		t.exited <- nil
	}
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("captures did not stop cleanly: %v", err)
	}
}
