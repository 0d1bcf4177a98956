// Package manager wires the controller-runtime manager the driver runs in:
// its options, caches and the controllers registered on it. cmd/manager, the
// sandbox and the tests all start the driver through New, so they run the
// same wiring.
package manager

import (
	"context"
	"flag"
	"net"
	"os"
	"strings"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/safetyretention"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sharedcreds"
)

// Options are the driver's settings; each has a command-line flag.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served; "0" disables them.
	MetricsAddr string
	// ProbeAddr is where /healthz and /readyz are served; "0" disables them.
	ProbeAddr string
	// PprofAddr is where Go's /debug/pprof endpoints are served; "0"
	// (the default) disables them.
	PprofAddr string
	// LeaderElect makes replicas elect one active leader.
	LeaderElect bool
	// LeaderElectionNamespace holds the leader Lease; empty means the
	// namespace the pod runs in.
	LeaderElectionNamespace string
	// Shard and Shards split the tenants among replica sets: this one
	// reconciles only the namespaces of shard Shard of Shards (see
	// internal/shard). Shards 0 or 1 means unsharded.
	Shard, Shards int
	// ShardSweepInterval is how often a shard's leader moves objects
	// labelled for another shard, or not labelled, to their shard.
	ShardSweepInterval time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles per controller.
	MaxConcurrentReconciles int
	// KubeAPIQPS and KubeAPIBurst bound the driver's client-side request
	// rate to the API server (the server's priority and fairness still
	// applies); zero keeps the rest config's own values.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// BackupDeadline bounds how long a BackupJob may wait or run.
	BackupDeadline time.Duration
	// RestoreDeadline bounds how long a RestoreJob may run, unless its
	// spec.options.restoreTimeoutSeconds says otherwise.
	RestoreDeadline time.Duration
	// MaxSnapshotsPerCluster bounds the snapshots of one tenant's
	// EtcdCluster that run at once; BackupJobs beyond it wait. 0 means no
	// bound.
	MaxSnapshotsPerCluster int
	// MaxInspectionJobs bounds the Backups' inspection Jobs that run at
	// once across the cluster; the others wait for a slot.
	MaxInspectionJobs int
	// MaxInspectionJobsPerNamespace bounds those of one namespace, so one
	// tenant's Backups never hold every slot. 0 means no bound.
	MaxInspectionJobsPerNamespace int
	// MaxRehearsalJobs bounds the dry runs' rehearsal Jobs that run at
	// once across the cluster, MaxRehearsalJobsPerNamespace those of one
	// namespace; the other dry runs wait, queued, oldest first. 0 means
	// no bound.
	MaxRehearsalJobs, MaxRehearsalJobsPerNamespace int
	// SafetyBackupsKeep is how many safety Backups are kept per
	// application (besides those unfinished RestoreJobs name).
	SafetyBackupsKeep int
	// ClaimSweepInterval is how often restore claims whose RestoreJob is
	// gone are removed.
	ClaimSweepInterval time.Duration
	// SharedCredentialsResync is how often the namespaces of each Etcd
	// strategy are rediscovered and their credentials Secrets read again
	// for shared-key detection (internal/sharedcreds).
	SharedCredentialsResync time.Duration
	// Namespace is the driver's own namespace: restore claims, captures
	// and the provenance key live there, out of tenants' reach.
	Namespace string
	// ProvenanceSecret names the Secret (in Namespace) holding the keys
	// that sign Backups; created with a fresh key when missing.
	ProvenanceSecret string
	// ProvenanceRefresh is how often the key Secret is re-read (a removed
	// key stops verifying, a lost Secret is reported, within it); 0 means
	// a minute. Tests shorten it. No flag.
	ProvenanceRefresh time.Duration
	// AllowedEndpointCIDRs are address ranges S3 endpoints may reach
	// although the endpoint policy denies them (loopback, link-local...).
	AllowedEndpointCIDRs []string
	// S3CAFile is a PEM bundle of CAs that https S3 endpoints may chain to,
	// besides the system's (an S3 service with a private CA).
	S3CAFile string
	// DisabledControllers names controllers not to run ("plan" leaves
	// scheduling Plans to Cozystack's own Plan controller; "plankeeper",
	// retention and drills, runs either way).
	DisabledControllers []string
	// StagingImage is the image of the restore's staging Job (the
	// driver's own image, which carries /etcd-stage); empty means
	// $STAGING_IMAGE, which the chart sets to the manager's image.
	StagingImage string
	// ClusterDomain is the cluster's DNS domain: the driver dials a
	// tenant's etcd at etcd-client.<ns>.svc.<ClusterDomain>. (fully
	// qualified, so no resolver search domain applies).
	ClusterDomain string
	// EtcdDialer, when set, opens the connections the driver makes to a
	// tenant's etcd (the client Service etcd-client.<ns>.svc.<domain>.:2379,
	// to read its revision before a restore); nil resolves the name and
	// dials through the endpoint policy, which checks every address first
	// (a dialer of one's own has the address it reached checked before a
	// byte is sent). The sandbox maps the Service name to its stand-in. No
	// flag.
	EtcdDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// SkipControllerNameValidation allows several managers in one process
	// (tests and the sandbox start and stop managers repeatedly). No flag.
	SkipControllerNameValidation bool
	// WrapClient, when set, wraps the client every controller uses. Tests
	// use it to inject failures and crashes at chosen API writes. No flag.
	WrapClient func(client.Client) client.Client
	// Clock is the time source of the Plan controllers and of the backup
	// age metrics; nil means the real clock. Tests and the sandbox set a
	// fake one. No flag.
	Clock clock.PassiveClock
	// BackupVerifier decides which Backups the per-application metrics
	// count; nil means the driver's provenance check (only Ready Backups
	// it signed, at the signed time). Tests override it. No flag.
	BackupVerifier freshness.Verifier
}

// client returns the client controllers of mgr use: it labels what it
// creates in tenant namespaces with the replica's shard, and confirms live
// that a tenant's cluster object its shard's cache lacks is really absent.
func (o Options) client(mgr ctrl.Manager) client.Client {
	c := shard.Stamping(o.cached(mgr), o.shard(), o.Namespace)
	if o.WrapClient != nil {
		return o.WrapClient(c)
	}
	return c
}

// cached is mgr's cached client, which, with shards, confirms live what
// the shard's cache of a tenant's cluster kinds does not hold
// (shard.Confirming).
func (o Options) cached(mgr ctrl.Manager) client.Client {
	return shard.Confirming(mgr.GetClient(), mgr.GetAPIReader(), o.shard(), clusterKinds()...)
}

// DefaultNamespace is the driver's namespace when neither the flag nor
// $POD_NAMESPACE says otherwise.
const DefaultNamespace = "etcd-backup-driver"

// DefaultOptions returns the settings used when no flag is given.
func DefaultOptions() Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = DefaultNamespace
	}
	return Options{
		MetricsAddr:             ":8080",
		ProbeAddr:               ":8081",
		PprofAddr:               "0",
		MaxConcurrentReconciles: 4,
		// A thousand tenants backing up at once cost about ten thousand
		// requests; client-go's 20/30 would spread them over minutes.
		KubeAPIQPS:   200,
		KubeAPIBurst: 400,
		// Not shorter than the etcd-operator's snapshot Job deadline
		// (1800s): a job never gives up on a snapshot that may still land.
		BackupDeadline:                30 * time.Minute,
		RestoreDeadline:               30 * time.Minute,
		ClaimSweepInterval:            claim.DefaultSweepInterval,
		SharedCredentialsResync:       sharedcreds.DefaultResyncInterval,
		ShardSweepInterval:            shard.DefaultSweepInterval,
		SafetyBackupsKeep:             safetyretention.DefaultKeep,
		MaxSnapshotsPerCluster:        1,
		MaxInspectionJobs:             8,
		MaxInspectionJobsPerNamespace: 2,
		MaxRehearsalJobs:              4,
		MaxRehearsalJobsPerNamespace:  1,
		Namespace:                     ns,
		ProvenanceSecret:              "etcd-backup-driver-provenance",
		StagingImage:                  os.Getenv("STAGING_IMAGE"),
		ClusterDomain:                 "cluster.local",
	}
}

// BindFlags registers a flag for each option on fs, defaulting to o.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr,
		`Address the Prometheus metrics endpoint binds to; "0" disables it.`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr,
		`Address the /healthz and /readyz endpoints bind to; "0" disables them.`)
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr,
		`Address Go's /debug/pprof profiling endpoints bind to; "0" disables them (the default).`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader-election Lease (default: the pod's namespace).")
	fs.IntVar(&o.Shard, "shard", o.Shard,
		"The shard this replica reconciles, from 0 to --shards minus 1 (shard 0 also takes objects without a shard label).")
	fs.IntVar(&o.Shards, "shards", o.Shards,
		"How many shards split the tenant namespaces; 0 or 1 runs unsharded. Every shard must be given the same count.")
	fs.DurationVar(&o.ShardSweepInterval, "shard-sweep-interval", o.ShardSweepInterval,
		"How often a shard moves objects whose shard label is missing or stale to the shard of their namespace.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles,
		"How many objects each controller reconciles in parallel.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"Requests per second the driver may send the API server (client-side limit; 0 keeps client-go's default).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"Requests the driver may send the API server in a burst above --kube-api-qps.")
	fs.DurationVar(&o.BackupDeadline, "backup-deadline", o.BackupDeadline,
		"How long a BackupJob may wait for its class, strategy, application or cluster, and run, before it fails.")
	fs.DurationVar(&o.RestoreDeadline, "restore-deadline", o.RestoreDeadline,
		"How long a RestoreJob may run before it fails (spec.options.restoreTimeoutSeconds overrides it per job).")
	fs.IntVar(&o.MaxSnapshotsPerCluster, "max-snapshots-per-cluster", o.MaxSnapshotsPerCluster,
		"How many snapshots of one tenant's EtcdCluster may run at once (BackupJobs beyond it wait, Pending WaitingForSnapshotSlot); 0 means no bound.")
	fs.IntVar(&o.MaxInspectionJobs, "max-inspection-jobs", o.MaxInspectionJobs,
		"How many Backup inspection Jobs may run at once across the cluster (the others wait, InspectionPending); at least 1.")
	fs.IntVar(&o.MaxInspectionJobsPerNamespace, "max-inspection-jobs-per-namespace", o.MaxInspectionJobsPerNamespace,
		"How many of those may be of one namespace's Backups (the others wait, InspectionPending); 0 means no bound.")
	fs.IntVar(&o.MaxRehearsalJobs, "max-rehearsal-jobs", o.MaxRehearsalJobs,
		"How many dry runs' rehearsal Jobs may run at once across the cluster (the others wait, Pending RehearsalQueued, oldest first); 0 means no bound.")
	fs.IntVar(&o.MaxRehearsalJobsPerNamespace, "max-rehearsal-jobs-per-namespace", o.MaxRehearsalJobsPerNamespace,
		"How many of those may be of one namespace (the others wait, Pending RehearsalQueued); 0 means no bound.")
	fs.IntVar(&o.SafetyBackupsKeep, "safety-backups-keep", o.SafetyBackupsKeep,
		"How many safety Backups (taken by restores) are kept per application, besides those an unfinished RestoreJob names; a negative value keeps all.")
	fs.DurationVar(&o.ClaimSweepInterval, "claim-sweep-interval", o.ClaimSweepInterval,
		"How often restore claims (Leases in the driver's namespace) whose RestoreJob or namespace is gone are removed.")
	fs.DurationVar(&o.SharedCredentialsResync, "shared-credentials-resync-interval", o.SharedCredentialsResync,
		"How often each Etcd strategy's namespaces are rediscovered and their credentials Secrets read again (one by name, at most 20 a second) to tell whether they share an S3 access key.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"The driver's own namespace, for restore claims, captures and the provenance key (default: $POD_NAMESPACE, else etcd-backup-driver).")
	fs.StringVar(&o.ProvenanceSecret, "provenance-secret", o.ProvenanceSecret,
		"Secret in the driver's namespace holding the keys that sign Backups; created when missing.")
	fs.StringVar(&o.StagingImage, "staging-image", o.StagingImage,
		"Image of the restore's staging Job, which checks the snapshot and raises its revision before etcd boots from it (default: $STAGING_IMAGE, the manager's own image).")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain,
		"The cluster's DNS domain: a restore reads a tenant etcd's live revision at etcd-client.<namespace>.svc.<domain>. (fully qualified).")
	fs.StringVar(&o.S3CAFile, "s3-ca-file", o.S3CAFile,
		"PEM bundle of CAs that https S3 endpoints may chain to, besides the system's.")
	fs.Func("disable-controllers",
		"Comma-separated controllers not to run: "+strings.Join(ControllerNames(), ", ")+
			" (plan leaves scheduling Plans to Cozystack's Plan controller; plankeeper, their retention and drills, runs either way).",
		func(v string) error {
			o.DisabledControllers = append(o.DisabledControllers, splitList(v)...)
			return nil
		})
	fs.Func("allowed-endpoint-cidrs",
		"Comma-separated address ranges S3 endpoints may reach although denied by default (loopback, link-local, metadata); for test setups only.",
		func(v string) error {
			o.AllowedEndpointCIDRs = append(o.AllowedEndpointCIDRs, splitList(v)...)
			return nil
		})
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
