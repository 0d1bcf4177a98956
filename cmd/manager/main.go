// Command manager runs the etcd-backup-driver controllers against the cluster
// named by --kubeconfig, $KUBECONFIG or the in-cluster service account.
package main

import (
	"flag"
	"os"
	// Plans name IANA time zones; embedding the database makes them work in
	// images without /usr/share/zoneinfo (distroless).
	_ "time/tzdata"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

func main() {
	opts := manager.DefaultOptions()
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

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
