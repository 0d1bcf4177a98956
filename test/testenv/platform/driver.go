package platform

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// Start creates the platform's objects and starts the real driver manager
// on cfg, as the chart runs it, with only the S3 server's own address
// (127.0.0.1) reachable: every other loopback address stays denied.
// tweak, when not nil, adjusts the options before the start. Start panics
// on error: it runs inside a suite's set-up.
func (p *Platform) Start(cfg *rest.Config, tweak func(*manager.Options)) {
	if err := p.Create(context.Background()); err != nil {
		panic(err)
	}
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.AllowedEndpointCIDRs = []string{"127.0.0.1/32"}
	o.BackupDeadline, o.RestoreDeadline = 2*time.Minute, 2*time.Minute
	// The tenants' testenv.Operator plays the staging Jobs (no Pods run).
	o.StagingImage = "etcd-backup-driver:platform-test"
	o.S3CAFile = p.CAFile
	if tweak != nil {
		tweak(&o)
	}
	mgr, err := manager.New(cfg, o)
	if err != nil {
		panic(err)
	}
	go func() {
		if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
			panic(err)
		}
	}()
}
