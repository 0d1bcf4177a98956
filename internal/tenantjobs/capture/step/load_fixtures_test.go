package step

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// loadTenant is one tenant of the load benchmark: its etcd (bin/etcd),
// its capture (bin/etcd-stage capture, its own process, as in its Pod),
// what its writer committed and when the chain made it durable.
type loadTenant struct {
	etcd    *etcdproc.Member
	cli     *clientv3.Client
	o       capture.Options
	store   changelog.Store // the chain, read from the S3 server itself
	capture *exec.Cmd
	exited  chan error // its end, put back by whoever takes it

	mu      sync.Mutex
	commits []point // the writer's: each revision and when its write returned
	durable []point // the index's newest revision, when its PUT completed
	// sealing is, for each segment, from when it was due (its first
	// revision's receive time and the segment interval) to durable.
	sealing []time.Duration
}

// point is a revision at a time.
type point struct {
	rev int64
	at  time.Time
}

// startTenantEtcds runs n etcds (bin/etcd, fsync off: a benchmark loses
// nothing with them) and waits for them all. One whose port was taken
// meanwhile (FreeURL's port is free when picked) starts again on others.
func startTenantEtcds(ctx context.Context, b *testing.B, n int) []*loadTenant {
	b.Helper()
	ts := make([]*loadTenant, n)
	b.Cleanup(func() { stopAll(ts) })
	for i := range ts {
		ts[i] = &loadTenant{etcd: launchEtcd(b, i)}
	}
	for i, t := range ts {
		for try := 1; ; try++ {
			err := t.etcd.WaitHealthy(ctx)
			if err == nil {
				break
			}
			log, _ := os.ReadFile(t.etcd.Spec.LogFile)
			if try == 3 || t.etcd.Running() || !bytes.Contains(log, []byte("address already in use")) {
				b.Fatalf("%v\n%s", err, log)
			}
			t.etcd = launchEtcd(b, i)
		}
		cli, err := etcdproc.Client(t.etcd.Spec.ClientURL)
		if err != nil {
			b.Fatal(err)
		}
		t.cli = cli
	}
	return ts
}

// launchEtcd starts tenant i's etcd on ports free now.
func launchEtcd(b *testing.B, i int) *etcdproc.Member {
	b.Helper()
	peer, err1 := etcdproc.FreeURL()
	url, err2 := etcdproc.FreeURL()
	if err1 != nil || err2 != nil {
		b.Fatal(err1, err2)
	}
	dir := filepath.Join(b.TempDir(), "etcd")
	m, err := etcdproc.Start(etcdproc.Spec{Binary: filepath.Join(testenv.RepoRoot(), "bin", "etcd"), Name: "etcd-0",
		DataDir: filepath.Join(dir, "data"), ClientURL: url, PeerURL: peer, InitialCluster: "etcd-0=" + peer,
		Token: fmt.Sprintf("tenant-%03d", i), LogFile: filepath.Join(dir, "etcd.log"), Flags: []string{"--unsafe-no-fsync"}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// stopAll stops the tenants' captures and etcds, all at once.
func stopAll(ts []*loadTenant) {
	var wg sync.WaitGroup
	for _, t := range ts {
		if t == nil {
			continue
		}
		wg.Go(func() {
			if t.capture != nil {
				_ = t.capture.Process.Kill() // an error when it has exited
				<-t.exited
			}
			if t.cli != nil {
				t.cli.Close()
			}
			t.etcd.Stop(10 * time.Second)
		})
	}
	wg.Wait()
}

// startCaptureProcess runs `bin/etcd-stage capture` for t, with the S3
// key in its environment as the Pod has it.
func (t *loadTenant) startCaptureProcess(b *testing.B, dir string) {
	b.Helper()
	cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "etcd-stage"), append([]string{capture.Subcommand}, t.o.Args()...)...)
	cmd.Env = []string{s3object.AccessKeyIDKey + "=" + s3creds.AccessKeyID, s3object.SecretAccessKeyKey + "=" + s3creds.SecretAccessKey}
	log, err := os.Create(filepath.Join(dir, "capture.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("%v (make build makes bin/etcd-stage)", err)
	}
	t.capture, t.exited = cmd, make(chan error, 1)
	go func() { t.exited <- cmd.Wait() }()
}

// durableAfter is when the chain first held rev (false: never).
func (t *loadTenant) durableAfter(rev int64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.durable), func(i int) bool { return t.durable[i].rev >= rev })
	if i == len(t.durable) {
		return time.Time{}, false
	}
	return t.durable[i].at, true
}

// noteDurable hears that idx was durable at at.
func (t *loadTenant) noteDurable(idx changelog.Index, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.durable); idx.Head != nil && (n == 0 || t.durable[n-1].rev < idx.Newest.Revision) {
		t.sealing = append(t.sealing, at.Sub(idx.Head.FromTime.Add(t.o.SegmentInterval)))
	}
	t.durable = append(t.durable, point{idx.Newest.Revision, at})
}

// received is when the capture had each revision of t's chain whole,
// read from the segments.
func (t *loadTenant) received(ctx context.Context, b *testing.B) map[int64]time.Time {
	b.Helper()
	idx, err := t.store.ReadIndex(ctx)
	if err != nil {
		b.Fatal(err)
	}
	c, err := t.store.Fetch(ctx, idx, func(changelog.Header) bool { return true }, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	at := map[int64]time.Time{}
	for _, seg := range c.Segments {
		f, err := os.Open(seg.Path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := changelog.NewReader(f, changelog.DefaultLimits)
		for err == nil {
			var rv changelog.Revision
			if rv, err = r.Next(); err == nil {
				at[rv.Revision] = rv.Time
			}
		}
		f.Close()
		if !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
	}
	return at
}

// watchedS3 is the sandbox's S3 server behind a proxy that notes, for
// each tenant, when an index PUT completed and the newest revision that
// index names: the point from which a restarted capture keeps a change.
type watchedS3 struct {
	srv     *s3server.Server
	dir     string
	proxy   *httptest.Server
	tenants sync.Map // the index's request path -> *loadTenant
	// failed are the requests the proxy could not pass on (answered
	// 502: the capture retries them).
	mu     sync.Mutex
	failed []string
	puts   []time.Duration // each PUT, as long as the server took
	// requests and conns count the captures' requests and connections.
	requests, conns atomic.Int64
}

func startWatchedS3(b *testing.B) *watchedS3 {
	b.Helper()
	w := &watchedS3{dir: b.TempDir()}
	var err error
	if w.srv, err = s3server.Start(w.dir, s3creds, "bkt"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.srv.Stop(context.Background()) })
	u, err := url.Parse(w.srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(rw http.ResponseWriter, r *http.Request, err error) {
		w.mu.Lock()
		w.failed = append(w.failed, fmt.Sprintf("%s %s at %s: %v", r.Method, r.URL.Path, time.Now().Format(time.TimeOnly), err))
		w.mu.Unlock()
		rw.WriteHeader(http.StatusBadGateway)
	}
	w.proxy = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		v, ok := w.tenants.Load(r.URL.Path)
		if r.Method != http.MethodPut {
			rp.ServeHTTP(rw, r)
			return
		}
		// The capture hears the answer to an index PUT only after the
		// index is read back: it cannot write a newer one meanwhile.
		rec, t0 := httptest.NewRecorder(), time.Now()
		rp.ServeHTTP(rec, r)
		at := time.Now()
		w.mu.Lock()
		w.puts = append(w.puts, at.Sub(t0))
		w.mu.Unlock()
		if !ok {
			copyResponse(rw, rec)
			return
		}
		if t := v.(*loadTenant); rec.Code == http.StatusOK {
			if idx, err := t.store.ReadIndex(r.Context()); err == nil {
				t.noteDurable(idx, at)
			}
		}
		copyResponse(rw, rec)
	}))
	w.proxy.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	w.proxy.Start()
	b.Cleanup(w.proxy.Close)
	return w
}

func copyResponse(rw http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, vs := range rec.Header() {
		rw.Header()[k] = vs
	}
	rw.WriteHeader(rec.Code)
	_, _ = rw.Write(rec.Body.Bytes())
}

// follow points t's capture at the proxy and its store at the server.
func (w *watchedS3) follow(b *testing.B, t *loadTenant, i int, base changelog.Base, dir string) {
	t.o = options(t.etcd.Spec.ClientURL, w.srv.URL, base, dir)
	t.o.Prefix = fmt.Sprintf("tenant-%03d/etcd", i)
	t.o.SegmentInterval, t.o.SegmentBytes = capture.DefaultSegmentInterval, capture.DefaultSegmentBytes
	t.store = storeOf(b, t.o)
	t.o.Endpoint = w.proxy.URL
	w.tenants.Store("/bkt/"+changelog.IndexKey(t.store.Chain), t)
}

// storedBytes is the size of every object stored (their metadata, the
// sha256 beside each segment, is kept apart and not counted).
func (w *watchedS3) storedBytes(b *testing.B) int64 {
	var n int64
	err := filepath.Walk(filepath.Join(w.dir, "buckets"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// procMem is a process's resident memory, from /proc: all of it now
// (with the pages of its binary, which every capture on a node shares),
// its own (anonymous: heap, stacks, buffers) now, and all of it at its
// peak.
type procMem struct{ rss, anon, peak int64 }

// procStat is a process's CPU time (user and system) and memory.
func procStat(pid int) (cpu time.Duration, m procMem, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, m, err
	}
	// Fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, m, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		for name, v := range map[string]*int64{"VmRSS": &m.rss, "RssAnon": &m.anon, "VmHWM": &m.peak} {
			var kb int64
			if _, e := fmt.Sscanf(l, name+": %d kB", &kb); e == nil {
				*v = kb << 10
			}
		}
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, m, nil
}
