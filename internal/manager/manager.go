package manager

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// LeaderElectionID names the Lease replicas compete for.
const LeaderElectionID = "etcd-backup-driver.strategy.backups.cozystack.io"

// New builds a manager for cfg with the driver's scheme, caches, probes and
// controllers. It does not start it.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  driverscheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// Stepping down promptly on shutdown lets the next replica take
		// over without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Only restore-claim Leases matter to the driver; the cluster's
			// node and leader-election Leases stay out of memory.
			&coordinationv1.Lease{}: {Label: labels.SelectorFromSet(labels.Set{claim.ComponentLabel: claim.ComponentValue})},
			// Only the member PVCs of "etcd" clusters matter (a restore
			// waits for them to go); other PVCs stay out of memory.
			&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(restore.MemberPVCLabels())},
		}},
		Client: client.Options{Cache: &client.CacheOptions{
			// Secrets are read live, one by name, so the driver never
			// holds every Secret of the cluster in memory or needs
			// list/watch on them.
			DisableFor: []client.Object{&corev1.Secret{}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	for _, setup := range controllers {
		if err := setup(mgr, o); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add readyz check: %w", err)
	}
	return mgr, nil
}
