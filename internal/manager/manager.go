package manager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/eventrecorder"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/informerguard"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sharedcreds"
)

// LeaderElectionID names the Lease replicas compete for.
const LeaderElectionID = "etcd-backup-driver.strategy.backups.cozystack.io"

// deps are what several controllers share.
type deps struct {
	keys   *provenance.Keyring
	policy endpointpolicy.Policy
	claims claim.Store
	schema *servedschema.Schema
	creds  *sharedcreds.Tracker
	broker *credbroker.Broker
	// events writes the controllers' Events, keeping none of them once
	// written (client-go's broadcaster keeps each for minutes).
	events *eventrecorder.Recorder
}

// New builds a manager for cfg with the driver's scheme, caches, probes and
// controllers. It does not start it.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	setups, err := enabled(o)
	if err != nil {
		return nil, err
	}
	policy, err := endpointpolicy.Parse(o.AllowedEndpointCIDRs)
	if err != nil {
		return nil, err
	}
	if o.S3CAFile != "" {
		if policy, err = policy.WithCAFile(o.S3CAFile); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	if o.KubeAPIQPS != 0 {
		cfg.QPS = float32(o.KubeAPIQPS)
	}
	if o.KubeAPIBurst != 0 {
		cfg.Burst = o.KubeAPIBurst
	}
	caPEM, err := o.s3CAPEM()
	if err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                  driverscheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.leaderElectionID(),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// Stepping down promptly on shutdown lets the next replica take
		// over without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipControllerNameValidation},
		Cache:                         cacheOptions(o.Namespace, len(caPEM)),
		// One informer per kind: a read in another form (typed,
		// metadata only) than the kind is cached in is refused.
		NewCache: informerguard.Declared(metadataOnly()),
		Client: client.Options{Cache: &client.CacheOptions{
			// Secrets are read live, one by name, so the driver never
			// holds every Secret of the cluster in memory or needs
			// list/watch on them.
			DisableFor: []client.Object{&corev1.Secret{}},
		}},
	}
	sharded, err := shardCaches(&opts.Cache, o.shard(), opts.Scheme)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	events := eventrecorder.New(mgr.GetClient(), mgr.GetScheme(), EventSource)
	// The served-schema watches go straight to the API server (three CRDs,
	// by name; not the manager's cache, which would keep them whole).
	watcher, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("create CRD watch client: %w", err)
	}
	d := deps{
		keys: &provenance.Keyring{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
			Namespace: o.Namespace, Name: o.ProvenanceSecret, Refresh: o.ProvenanceRefresh,
			Recorder: events},
		policy: policy,
		claims: claim.Store{Client: o.client(mgr), Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: o.Namespace},
		schema: &servedschema.Schema{Reader: mgr.GetAPIReader(), Watcher: watcher},
		creds:  sharedcreds.NewTracker(nil),
		broker: newBroker(mgr, o, policy),
		events: events,
	}
	if err := mgr.Add(d.events); err != nil {
		return nil, fmt.Errorf("add event recorder: %w", err)
	}
	if err := mgr.Add(d.schema); err != nil {
		return nil, fmt.Errorf("add served-schema watches: %w", err)
	}
	if err := mgr.Add(d.keys); err != nil {
		return nil, fmt.Errorf("add provenance keyring: %w", err)
	}
	sweeper := &claim.Sweeper{Client: o.client(mgr), Reader: mgr.GetAPIReader(), Namespace: o.Namespace, Interval: o.ClaimSweepInterval}
	if err := mgr.Add(sweeper); err != nil {
		return nil, fmt.Errorf("add restore claim sweeper: %w", err)
	}
	if err := mgr.Add(o.shardSweeper(mgr, sharded)); err != nil {
		return nil, fmt.Errorf("add shard sweeper: %w", err)
	}
	for _, setup := range setups {
		if err := setup(mgr, o, d); err != nil {
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
