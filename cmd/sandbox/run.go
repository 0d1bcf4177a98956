package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
)

// run starts the sandbox, publishes how to reach it, and stops it on
// SIGINT/SIGTERM.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	plainHTTP := fs.Bool("plain-http", false, "S3 speaks plain http instead of https with the sandbox's own CA (a strategy then needs its StrategyPolicy's allowHTTPEndpoint)")
	dir := fs.String("dir", "", "data folder (S3 objects, etcd members, logs); default: a temporary folder removed on exit")
	envFile := fs.String("env-file", "", "write shell exports (KUBECONFIG, S3 endpoint and keys) here once ready")
	verbose := fs.Bool("v", false, "log every controller's output to stderr")
	restoreDeadline := fs.Duration("restore-deadline", 10*time.Minute, "the driver's --restore-deadline")
	backupDeadline := fs.Duration("backup-deadline", 10*time.Minute, "the driver's --backup-deadline")
	s3 := fs.String("s3", string(sandbox.S3Embedded), "S3 server: embedded (fast, one shared key) or minio (bin/minio, `make tools`; the examples then broker a key per tenant namespace)")
	image := fs.Bool("image", false, "container mode: run the driver, and the restore's staging Pods, from the image `make image` built, with podman (`make sandbox IMAGE=1`)")
	_ = fs.Parse(args)

	logOpts := []zap.Opts{zap.UseDevMode(false)}
	if !*verbose {
		logOpts = append(logOpts, zap.Level(zapcore.ErrorLevel))
	}
	ctrl.SetLogger(zap.New(logOpts...))

	// Signals are caught before anything starts, so that Ctrl-C during
	// start-up still runs Stop.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	started := time.Now()
	sb, err := sandbox.Start(sandbox.Options{
		Dir:       *dir,
		S3Server:  sandbox.S3Server(*s3),
		Image:     *image,
		PlainHTTP: *plainHTTP,
		Driver: func(o *manager.Options) {
			o.RestoreDeadline, o.BackupDeadline = *restoreDeadline, *backupDeadline
		},
	})
	if err != nil {
		return err
	}
	stop := func() error {
		fmt.Fprintln(os.Stderr, "sandbox: stopping (driver, stand-ins, etcd members, S3, API server)...")
		err := sb.Stop()
		if err == nil {
			fmt.Fprintln(os.Stderr, "sandbox: stopped; nothing left running")
		}
		return err
	}

	kubeconfig := filepath.Join(sb.Dir, "kubeconfig")
	if err := sb.WriteKubeconfig(kubeconfig); err != nil {
		return errors.Join(err, stop())
	}
	self, _ := os.Executable()
	exports := [][2]string{
		{"KUBECONFIG", kubeconfig},
		{"SANDBOX", "1"},
		{"SANDBOX_BIN", self},
		{"SANDBOX_DIR", sb.Dir},
		{"S3_ENDPOINT", sb.S3URL},
		// The CA S3's https certificate chains to: the driver has it as
		// --s3-ca-file; clients of S3 (aws --ca-bundle, mc) need it too.
		{"S3_CA_FILE", sb.S3CAFile},
		{"S3_BUCKET", sandbox.DefaultBucket},
		{"S3_ACCESS_KEY_ID", sb.PlatformCredentials.AccessKeyID},
		{"S3_SECRET_ACCESS_KEY", sb.PlatformCredentials.SecretAccessKey},
		// With MinIO the keys above are the platform's admin key (a user
		// with the least-privilege policy, not root): the examples keep it
		// in the driver's namespace and broker a key per tenant namespace.
		{"S3_CREDENTIAL_BROKER", brokerProvider(sb)},
		{"DRIVER_NAMESPACE", sb.DriverNamespace},
		{"DRIVER_IMAGE", driverImage(sb)},
		{"SANDBOX_STARTUP_SECONDS", fmt.Sprintf("%.1f", time.Since(started).Seconds())},
		{"SANDBOX_PID", fmt.Sprint(os.Getpid())},
	}
	var b strings.Builder
	for _, kv := range exports {
		fmt.Fprintf(&b, "export %s=%q\n", kv[0], kv[1])
	}
	if *envFile != "" {
		if err := os.WriteFile(*envFile, []byte(b.String()), 0o600); err != nil {
			return errors.Join(err, stop())
		}
	}
	driver := "etcd-backup-driver (in process)"
	if c := sb.DriverContainer; c != nil {
		driver = fmt.Sprintf("etcd-backup-driver (container %s of %s, user %s, read-only root; log %s)", c.Name, c.Image, c.User, sb.DriverLog)
	}
	fmt.Printf(`sandbox ready in %.1fs: kube-apiserver, %s, S3 at %s (bucket %s),
etcd-operator and helm-controller stand-ins. In another shell:

%s
  kubectl get etcdclusters,backupjobs,backups,restorejobs -A
  bash examples/backups/etcd/run-all.sh

Ctrl-C stops everything.
`, time.Since(started).Seconds(), driver, sb.S3URL, sandbox.DefaultBucket, indent(b.String()))

	<-sigs
	return stop()
}

// brokerProvider is the credential broker provider the examples use on
// sb's S3 server: MinIO on MinIO, none (a Secret per namespace) on the
// embedded server, which has no identities to issue.
func brokerProvider(sb *sandbox.Sandbox) string {
	if sb.MinIO != nil {
		return string(driverv1alpha1.CredentialBrokerMinIO)
	}
	return ""
}

// driverImage is the image the driver runs from; empty when it runs in
// process.
func driverImage(sb *sandbox.Sandbox) string {
	if sb.DriverContainer == nil {
		return ""
	}
	return sb.DriverContainer.Image
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
