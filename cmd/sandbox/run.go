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

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
)

// run starts the sandbox, publishes how to reach it, and stops it on
// SIGINT/SIGTERM.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	dir := fs.String("dir", "", "data folder (S3 objects, etcd members, logs); default: a temporary folder removed on exit")
	envFile := fs.String("env-file", "", "write shell exports (KUBECONFIG, S3 endpoint and keys) here once ready")
	verbose := fs.Bool("v", false, "log every controller's output to stderr")
	restoreDeadline := fs.Duration("restore-deadline", 10*time.Minute, "the driver's --restore-deadline")
	backupDeadline := fs.Duration("backup-deadline", 10*time.Minute, "the driver's --backup-deadline")
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
		Dir: *dir,
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
	exports := map[string]string{
		"KUBECONFIG":              kubeconfig,
		"SANDBOX":                 "1",
		"SANDBOX_BIN":             self,
		"SANDBOX_DIR":             sb.Dir,
		"S3_ENDPOINT":             sb.S3.URL,
		"S3_BUCKET":               sandbox.DefaultBucket,
		"S3_ACCESS_KEY_ID":        sb.S3Credentials.AccessKeyID,
		"S3_SECRET_ACCESS_KEY":    sb.S3Credentials.SecretAccessKey,
		"SANDBOX_STARTUP_SECONDS": fmt.Sprintf("%.1f", time.Since(started).Seconds()),
		"SANDBOX_PID":             fmt.Sprint(os.Getpid()),
	}
	var b strings.Builder
	for _, k := range []string{"KUBECONFIG", "SANDBOX", "SANDBOX_BIN", "SANDBOX_DIR", "S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "SANDBOX_STARTUP_SECONDS", "SANDBOX_PID"} {
		fmt.Fprintf(&b, "export %s=%q\n", k, exports[k])
	}
	if *envFile != "" {
		if err := os.WriteFile(*envFile, []byte(b.String()), 0o600); err != nil {
			return errors.Join(err, stop())
		}
	}
	fmt.Printf(`sandbox ready in %.1fs: kube-apiserver, etcd-backup-driver, S3 at %s (bucket %s),
etcd-operator and helm-controller stand-ins. In another shell:

%s
  kubectl get etcdclusters,backupjobs,backups,restorejobs -A
  bash examples/backups/etcd/run-all.sh

Ctrl-C stops everything.
`, time.Since(started).Seconds(), sb.S3.URL, sandbox.DefaultBucket, indent(b.String()))

	<-sigs
	return stop()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
