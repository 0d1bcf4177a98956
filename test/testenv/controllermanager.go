package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultControllers are the kube-controller-manager controllers an Env
// runs: the garbage collector (owner references), the Job controller (Pods,
// backoff, activeDeadlineSeconds) and PVC protection (a deleted PVC keeps
// the kubernetes.io/pvc-protection finalizer until no Pod uses it). Nothing
// that needs a kubelet, a scheduler or service-account keys.
var DefaultControllers = []string{
	"garbage-collector-controller",
	"job-controller",
	"persistentvolumeclaim-protection-controller",
}

// WorkloadControllers are DefaultControllers plus what a Deployment's Pods
// need besides a kubelet: the Deployment and ReplicaSet controllers and
// the publisher of every namespace's kube-root-ca.crt ConfigMap (the API
// server's CA, which projected service-account volumes mount). The
// sandbox runs them for the point-in-time capture's Deployment.
var WorkloadControllers = append(append([]string(nil), DefaultControllers...),
	"deployment-controller", "replicaset-controller", "root-ca-certificate-publisher-controller")

// controllerManagerReadyTimeout bounds the wait for the garbage collector's
// first collection; its caches sync in a few seconds on a quiet machine.
const controllerManagerReadyTimeout = 2 * time.Minute

// ControllerManager is a running bin/kube-controller-manager.
type ControllerManager struct {
	// LogFile receives the process's output.
	LogFile string

	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// StartControllerManager runs bin/kube-controller-manager against the API
// server cfg reaches, with the given controllers (DefaultControllers when
// none), no leader election and no serving port. It returns once the
// garbage collector has collected a probe object, which proves its caches,
// those of every installed CRD included, have synced.
func StartControllerManager(cfg *rest.Config, controllers ...string) (_ *ControllerManager, err error) {
	if err := requireBinaries("kube-controller-manager"); err != nil {
		return nil, err
	}
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	dir, err := os.MkdirTemp("", "testenv-kcm-")
	if err != nil {
		return nil, fmt.Errorf("testenv: kube-controller-manager folder: %w", err)
	}
	m := &ControllerManager{dir: dir, LogFile: filepath.Join(dir, "kube-controller-manager.log"), exited: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.Stop())
		}
	}()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cfg, kubeconfig); err != nil {
		return nil, err
	}
	logs, err := os.Create(m.LogFile)
	if err != nil {
		return nil, fmt.Errorf("testenv: kube-controller-manager log: %w", err)
	}
	defer logs.Close() // the child holds its own descriptor
	m.cmd = exec.Command(filepath.Join(binDir(), "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		// Tests create and delete objects in bursts; the default 20 QPS
		// would make the collector the slowest part of a restore.
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--concurrent-gc-syncs=20",
		"--concurrent-job-syncs=10",
		"--v=1",
	)
	m.cmd.Stdout, m.cmd.Stderr = logs, logs
	// Own process group, and killed by the kernel should the test binary
	// die without stopping it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: start kube-controller-manager: %w", err)
	}
	go func() {
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	if err := m.awaitCollecting(cfg); err != nil {
		return nil, err
	}
	return m, nil
}

// awaitCollecting creates a ConfigMap whose only owner does not exist and
// waits for the garbage collector to delete it.
func (m *ControllerManager) awaitCollecting(cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("testenv: client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerManagerReadyTimeout)
	defer cancel()
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: metav1.NamespaceDefault,
		Name:      "testenv-gc-probe-" + rand.String(6),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "testenv-gc-probe-absent-owner",
			UID: types.UID("00000000-0000-0000-0000-" + rand.String(12)),
		}},
	}}
	if err := c.Create(ctx, probe); err != nil {
		return fmt.Errorf("testenv: create garbage-collector probe: %w", err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(probe), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("testenv: kube-controller-manager exited (%v); see %s", m.err, m.LogFile)
		case <-ctx.Done():
			return fmt.Errorf("testenv: kube-controller-manager's garbage collector did not collect within %s; see %s", controllerManagerReadyTimeout, m.LogFile)
		case <-tick.C:
		}
	}
}

// Stop ends the process (SIGTERM, SIGKILL after five seconds) and removes
// its folder unless TEST_LOGS=1 (the log is kept for reading then).
func (m *ControllerManager) Stop() error {
	if m.cmd != nil && m.cmd.Process != nil {
		select {
		case <-m.exited:
		default:
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-m.exited:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
				<-m.exited
			}
		}
	}
	if os.Getenv("TEST_LOGS") == "1" {
		fmt.Fprintln(os.Stderr, "testenv: kube-controller-manager log kept at", m.LogFile)
		return nil
	}
	return os.RemoveAll(m.dir)
}

// WriteKubeconfig writes a kubeconfig for cfg's user to path, for processes
// (kube-controller-manager, kubectl, the example scripts) that take one.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["envtest-admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest-admin", Namespace: metav1.NamespaceDefault}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
