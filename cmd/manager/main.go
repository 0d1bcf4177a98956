// Command manager runs the etcd-backup-driver controllers against the cluster
// named by --kubeconfig, $KUBECONFIG or the in-cluster service account.
package main

import (
	"flag"
	"fmt"
	"os"
	// Plans name IANA time zones; embedding the database makes them work in
	// images without /usr/share/zoneinfo (distroless).
	_ "time/tzdata"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/memlimit"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/version"
)

func main() {
	opts := manager.DefaultOptions()
	opts.BindFlags(flag.CommandLine)
	memRatio := flag.Float64("memory-limit-ratio", 0.9,
		"Set the Go runtime's soft memory limit to this share of the container's memory limit (cgroup), unless GOMEMLIMIT is set; 0 disables.")
	showVersion := flag.Bool("version", false, "Print the version, commit and commit date, and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("etcd-backup-driver manager"))
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	if soft, err := memlimit.Apply("/sys/fs/cgroup", *memRatio); err != nil {
		log.Error(err, "set the Go memory limit")
		os.Exit(1)
	} else if soft > 0 {
		log.Info("Go memory limit set from the container's", "bytes", soft, "ratio", *memRatio)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "load kubeconfig")
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		log.Error(err, "build manager")
		os.Exit(1)
	}
	log.Info("starting manager", "metrics", opts.MetricsAddr, "probes", opts.ProbeAddr, "leaderElect", opts.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
