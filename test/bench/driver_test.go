package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// driver is the manager binary running against the bench's API server.
type driver struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string
}

// usage is what the driver process has spent so far.
type usage struct {
	cpu      time.Duration // user + system
	rss, hwm int64         // resident set now and at its peak, bytes
	anon     int64         // its anonymous part (RssAnon: the Go heap and stacks, not the mapped binary)
	requests float64       // API requests sent (rest_client_requests_total)
	byMethod map[string]float64
	// conflicts are the requests refused 409 (an optimistic lock lost,
	// or a create of what exists), counted in requests too.
	conflicts float64
	heap      int64 // Go heap allocated (live, right after a collection)
}

// perOp is what happened between u0 and u, per operation out of n: the
// requests by method, e.g. "GET 1.0 PATCH 3.0 POST 4.0" (GET includes
// lists), and the conflicts (409) among them when there were any.
func perOp(u0, u usage, n int) string {
	var parts []string
	for _, m := range []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE"} {
		if d := u.byMethod[m] - u0.byMethod[m]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", m, d/float64(n)))
		}
	}
	if c := u.conflicts - u0.conflicts; c > 0 {
		parts = append(parts, fmt.Sprintf("(409 %.2f)", c/float64(n)))
	}
	return strings.Join(parts, " ")
}

// startDriver runs bin/manager (built by `make bench`) as the chart does,
// with only loopback S3 allowed and the extra flags given, until b ends.
// BENCH_DRIVER_ARGS adds flags and
// BENCH_DRIVER_ENV (KEY=VALUE ...) environment variables;
// BENCH_MANAGER_LOG keeps its log at that path. extra are further flags
// (a shard's).
func startDriver(b *testing.B, extra ...string) *driver {
	b.Helper()
	bin := filepath.Join(testenv.RepoRoot(), "bin", "manager")
	if p := os.Getenv("BENCH_MANAGER_BIN"); p != "" {
		bin = p // a manager built elsewhere (bin/ may be shared)
	}
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%s is missing: run `make bench` (it builds the manager first)", bin)
	}
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		b.Fatal(err)
	}
	port, pprofPort := freePort(b), freePort(b)
	args := []string{
		"--pprof-bind-address=127.0.0.1:" + strconv.Itoa(pprofPort),
		"--namespace=" + testenv.DriverNamespace,
		"--allowed-endpoint-cidrs=127.0.0.1/32",
		"--s3-ca-file=" + plat.CAFile,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(port),
		"--health-probe-bind-address=0",
		"--zap-log-level=error",
	}
	args = append(append(args, extra...), strings.Fields(os.Getenv("BENCH_DRIVER_ARGS"))...)
	logPath := filepath.Join(dir, "manager.log")
	if p := os.Getenv("BENCH_MANAGER_LOG"); p != "" {
		logPath = p
	}
	logs, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), strings.Fields(os.Getenv("BENCH_DRIVER_ENV"))...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	d := &driver{cmd: cmd, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port),
		pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = logs.Close()
		if b.Failed() {
			if out, err := os.ReadFile(logs.Name()); err == nil {
				b.Logf("manager log:\n%s", out)
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, _, _, err := d.scrape(); err == nil {
			return d
		}
		if time.Now().After(deadline) {
			b.Fatalf("the manager serves no metrics at %s", d.metrics)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the driver (SIGTERM) before b ends, so that another can take
// its place on the same API server.
func (d *driver) stop(b *testing.B) {
	b.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	_ = d.cmd.Wait()
}

// usage reads the process's CPU time and memory from /proc and its request
// count from its metrics.
func (d *driver) usage(b *testing.B) usage {
	b.Helper()
	var u usage
	var err error
	if u.requests, u.byMethod, u.conflicts, u.heap, err = d.scrape(); err != nil {
		b.Fatal(err)
	}
	pid := d.cmd.Process.Pid
	if _, _, u.cpu, err = procStat(pid); err != nil {
		b.Fatal(err)
	}
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		name, val, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			u.rss = kb << 10
		case "VmHWM":
			u.hwm = kb << 10
		case "RssAnon":
			u.anon = kb << 10
		}
	}
	return u
}

// collect has the driver run a garbage collection (by taking a heap
// profile), so that the next usage shows its live heap. The profile goes to
// $BENCH_HEAP_PROFILE when set (read it with go tool pprof bin/manager FILE).
func (d *driver) collect(b *testing.B) {
	b.Helper()
	resp, err := http.Get(d.pprof + "/heap?gc=1")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := io.Discard
	if path := os.Getenv("BENCH_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		out = f
		b.Logf("heap profile of the driver: %s", path)
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// platformCPU is the CPU time the API server and etcd (the bench's child
// processes) have spent so far.
func platformCPU(b *testing.B) time.Duration {
	b.Helper()
	return childCPU("kube-apiserver", "etcd")
}

// childCPU is the CPU time the bench's child processes named one of comms
// have spent so far.
func childCPU(comms ...string) time.Duration {
	entries, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, cpu, err := procStat(pid)
		if err == nil && ppid == os.Getpid() && slices.Contains(comms, comm) {
			total += cpu
		}
	}
	return total
}

// procStat reads a process's command name, parent and CPU time (user +
// system) from /proc/<pid>/stat.
func procStat(pid int) (comm string, ppid int, cpu time.Duration, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, err
	}
	open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	if open < 0 || end < open {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	// After the name: state, ppid, ... utime and stime are the 12th and
	// 13th fields, in clock ticks (100 per second).
	fields := strings.Fields(string(stat[end+2:]))
	ppid, _ = strconv.Atoi(fields[1])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return string(stat[open+1 : end]), ppid, time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// scrape sums rest_client_requests_total over every code, method and
// host, per method and for code 409, and reads the Go heap's allocated
// bytes.
func (d *driver) scrape() (requests float64, byMethod map[string]float64, conflicts float64, heap int64, err error) {
	resp, err := http.Get(d.metrics)
	if err != nil {
		return 0, nil, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, 0, 0, fmt.Errorf("metrics: %s", resp.Status)
	}
	byMethod = map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		isRequests := strings.HasPrefix(line, "rest_client_requests_total{")
		if !isRequests && !strings.HasPrefix(line, "go_memstats_heap_alloc_bytes ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, nil, 0, 0, fmt.Errorf("metrics: %q: %w", line, err)
		}
		if !isRequests {
			heap = int64(v)
			continue
		}
		requests += v
		if strings.Contains(line, `code="409"`) {
			conflicts += v
		}
		if _, rest, ok := strings.Cut(line, `method="`); ok {
			m, _, _ := strings.Cut(rest, `"`)
			byMethod[m] += v
		}
	}
	return requests, byMethod, conflicts, heap, sc.Err()
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
