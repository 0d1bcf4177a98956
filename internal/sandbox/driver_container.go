package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// DriverRelease is the release name container mode renders the driver's
// chart as; with it the chart's names are the manager's defaults (the
// provenance Secret etcd-backup-driver-provenance).
const DriverRelease = "etcd-backup-driver"

// Where the driver's container finds the sandbox's kubeconfig.
const containerKubeconfig = "/var/run/etcd-backup-driver-sandbox/kubeconfig"

// Where the chart mounts the S3 CA bundle (s3CA.configMap, key ca.crt),
// and the driver's container finds the sandbox's.
const containerS3CA = "/etc/etcd-backup-driver/s3-ca/ca.crt"

// DriverValues are the chart values container mode installs the driver
// with: image, a repository:tag; one replica (still electing a leader, as
// the chart's default does); the metrics and probe ports (the container
// shares the host's network, so they must be free); the deadlines; and
// the loopback range for the S3 endpoint policy, as the in-process driver
// has it (testenv.LoopbackCIDRs).
func DriverValues(image string, metricsPort, probePort int, backupDeadline, restoreDeadline time.Duration) map[string]any {
	repo, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	return map[string]any{
		"image":           map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"replicas":        1,
		"metrics":         map[string]any{"port": metricsPort},
		"probes":          map[string]any{"port": probePort},
		"backupDeadline":  backupDeadline.String(),
		"restoreDeadline": restoreDeadline.String(),
		"extraArgs":       []any{"--allowed-endpoint-cidrs=" + strings.Join(testenv.LoopbackCIDRs, ",")},
	}
}

// withS3CA sets the chart's s3CA values: the chart then passes
// --s3-ca-file naming the bundle where it mounts its ConfigMap
// (containerS3CA), and container mode bind-mounts the sandbox's CA file
// there instead.
func withS3CA(values map[string]any) {
	values["s3CA"] = map[string]any{"configMap": "etcd-backup-driver-sandbox-s3-ca", "key": "ca.crt"}
}

// DriverChart renders the driver's chart (charts/etcd-backup-driver) with
// values as release DriverRelease in the driver's namespace
// (testenv.DriverNamespace): what container mode runs the driver from
// (DriverPod), and what test/charts applies to an API server.
func DriverChart(values map[string]any) ([]*unstructured.Unstructured, error) {
	return chartrender.Render(chartrender.ChartDir("etcd-backup-driver"),
		chartrender.Release{Name: DriverRelease, Namespace: testenv.DriverNamespace, Values: values})
}

// DriverPod is the Pod spec of DriverChart's Deployment: container mode
// runs its one container (container.FromPod).
func DriverPod(values map[string]any) (*corev1.PodSpec, error) {
	objs, err := DriverChart(values)
	if err != nil {
		return nil, err
	}
	u := chartrender.Find(objs, "Deployment", DriverRelease)
	if u == nil {
		return nil, errors.New("the driver's chart renders no Deployment " + DriverRelease)
	}
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dep); err != nil {
		return nil, fmt.Errorf("Deployment %s: %w", DriverRelease, err)
	}
	if n := len(dep.Spec.Template.Spec.Containers); n != 1 {
		return nil, fmt.Errorf("Deployment %s has %d containers, container mode runs one", DriverRelease, n)
	}
	return &dep.Spec.Template.Spec, nil
}

// driverContainer is the driver running from its image.
type driverContainer struct {
	runtime *container.Runtime
	spec    container.Spec
	cmd     *exec.Cmd
	done    chan error
	log     string
}

// startDriverContainer runs the driver from rt's image as the chart's
// Deployment runs it (DriverPod: its command, arguments, security context
// and limits), on the host's network, with the admin kubeconfig and the
// client Services' hosts file (etcdservice.Services.PublishHosts)
// mounted read-only, and waits until it is ready.
func (s *Sandbox) startDriverContainer(rt *container.Runtime, opts manager.Options, hosts string) (*driverContainer, error) {
	dir := filepath.Join(s.Dir, "driver")
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	values := DriverValues(rt.Image, metricsPort, probePort, opts.BackupDeadline, opts.RestoreDeadline)
	if s.S3CAFile != "" {
		withS3CA(values)
	}
	pod, err := DriverPod(values)
	if err != nil {
		return nil, err
	}
	spec, err := container.FromPod(pod, &pod.Containers[0])
	if err != nil {
		return nil, err
	}
	// The container's user reads the kubeconfig; no one else on the
	// host can (it is an admin's).
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := s.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	if uid, gid, ok := userOf(spec.User); ok {
		if err := os.Chown(kubeconfig, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(kubeconfig, 0o400); err != nil {
		return nil, err
	}
	spec.Name = fmt.Sprintf("etcd-backup-driver-sandbox-%d-%04x", os.Getpid(), rand.IntN(1<<16))
	spec.Env = map[string]string{"KUBECONFIG": containerKubeconfig}
	spec.Mounts = append(spec.Mounts,
		container.Mount{Host: kubeconfig, Container: containerKubeconfig, ReadOnly: true},
		container.Mount{Host: hosts, Container: "/etc/hosts", ReadOnly: true})
	if s.S3CAFile != "" {
		spec.Mounts = append(spec.Mounts, container.Mount{Host: s.S3CAFile, Container: containerS3CA, ReadOnly: true})
	}
	spec.Labels = map[string]string{container.OwnerLabel: strconv.Itoa(os.Getpid())}

	d := &driverContainer{runtime: rt, spec: spec, done: make(chan error, 1), log: filepath.Join(dir, "driver.log")}
	logFile, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	d.cmd = rt.Run(context.Background(), spec)
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("podman run %s: %w", rt.Image, err)
	}
	go func() {
		d.done <- d.cmd.Wait()
		logFile.Close()
	}()
	if err := d.awaitReady(probePort, 2*time.Minute); err != nil {
		return nil, errors.Join(err, d.stop())
	}
	return d, nil
}

// awaitReady polls the container's /readyz until it answers 200.
func (d *driverContainer) awaitReady(port int, timeout time.Duration) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-d.done:
			d.done <- err
			return fmt.Errorf("the driver's container %s ended before it was ready (%v); its log:\n%s", d.spec.Name, err, tail(d.log, 40))
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("the driver's container %s was not ready within %s; its log:\n%s", d.spec.Name, timeout, tail(d.log, 40))
}

// stop stops the container (SIGTERM, as a Pod's deletion) and waits for it.
func (d *driverContainer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := d.runtime.Stop(ctx, d.spec.Name, 10)
	select {
	case <-d.done:
	case <-ctx.Done():
		_ = d.cmd.Process.Kill()
		err = errors.Join(err, fmt.Errorf("the driver's container %s did not stop", d.spec.Name))
	}
	return err
}

// userOf parses "uid[:gid]".
func userOf(user string) (uid, gid int, ok bool) {
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, false
	}
	gid = -1
	if hasGroup {
		if gid, err = strconv.Atoi(g); err != nil {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
