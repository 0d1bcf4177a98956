package manager

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plan"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plankeeper"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/safetyretention"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sharedcreds"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategymigration"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal"
)

// EventSource is the reporting controller name on the driver's Events.
const EventSource = "etcd-backup-driver"

// setupFunc registers one controller (with its watches and indexes) on mgr.
type setupFunc func(mgr ctrl.Manager, o Options, d deps) error

// controllers lists every controller the driver runs, by the name
// --disable-controllers knows it by, in registration order. Each lives in
// its own package under internal/.
var controllers = []struct {
	name  string
	setup setupFunc
}{
	{"backupjob", setupBackupJobs},
	{"restore", setupRestores},
	{"rehearsal", setupRehearsals},
	{"plan", setupPlans},
	{"plankeeper", setupPlanKeeper},
	{"backupdeletion", setupBackupDeletion},
	{"metrics", setupBackupMetrics},
	{"safetyretention", setupSafetyRetention},
	{"sharedcreds", setupSharedCredentials},
	{"credbroker", setupCredentialBroker},
	{"backupinspection", setupBackupInspection},
	{"strategypolicy", setupStrategyPolicies},
	{"strategymigration", setupStrategyMigration},
	{"capture", setupCapture},
}

// ControllerNames are the names --disable-controllers knows, in
// registration order.
func ControllerNames() []string {
	out := make([]string, 0, len(controllers))
	for _, c := range controllers {
		out = append(out, c.name)
	}
	return out
}

// enabled is the controllers o leaves on; an unknown name is an error.
func enabled(o Options) ([]setupFunc, error) {
	off := map[string]bool{}
	for _, n := range o.DisabledControllers {
		off[n] = true
	}
	var on []setupFunc
	for _, c := range controllers {
		if off[c.name] {
			delete(off, c.name)
			continue
		}
		on = append(on, c.setup)
	}
	for n := range off {
		return nil, fmt.Errorf("--disable-controllers: unknown controller %q (known: %s)", n, strings.Join(ControllerNames(), ", "))
	}
	return on, nil
}

func setupBackupJobs(mgr ctrl.Manager, o Options, d deps) error {
	r := &backupjob.Reconciler{
		Client:    o.client(mgr),
		APIReader: mgr.GetAPIReader(),
		Recorder:  d.events,
		Deadline:  o.BackupDeadline,
		Keys:      d.keys,
		Policy:    d.policy,
		// A BackupJob's last check before it snapshots a cluster must see
		// a claim taken a moment ago: read claims live.
		Claims:      d.claims.LiveStore(),
		Credentials: d.creds,
		Broker:      d.broker,

		MaxSnapshotsPerCluster: o.MaxSnapshotsPerCluster,
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

func setupRestores(mgr ctrl.Manager, o Options, d deps) error {
	r := &restore.Reconciler{
		Client:     o.client(mgr),
		Reader:     o.cached(mgr),
		LiveReader: mgr.GetAPIReader(),
		Recorder:   d.events,
		Deadline:   o.RestoreDeadline,
		Namespace:  o.Namespace,
		Claims:     d.claims,
		Keys:       d.keys,
		Policy:     d.policy,
		Schema:     d.schema,
		Broker:     d.broker,

		StagingImage:         o.StagingImage,
		Revisions:            o.liveReader(mgr, d),
		AllowedEndpointCIDRs: o.AllowedEndpointCIDRs,
	}
	pem, err := o.s3CAPEM()
	if err != nil {
		return err
	}
	r.S3CAPEM = pem
	return r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles})
}

// liveReader reads tenants' live etcds, for the restore's revision and the
// rehearsal's census.
func (o Options) liveReader(mgr ctrl.Manager, d deps) liverevision.Reader {
	return liverevision.Reader{Secrets: mgr.GetAPIReader(), Dial: o.EtcdDialer, Policy: d.policy, ClusterDomain: o.ClusterDomain}
}

// s3CAPEM is the extra S3 CA bundle the driver's Jobs are handed.
func (o Options) s3CAPEM() (string, error) {
	if o.S3CAFile == "" {
		return "", nil
	}
	pem, err := os.ReadFile(o.S3CAFile)
	if err != nil {
		return "", fmt.Errorf("read --s3-ca-file for the driver's Jobs: %w", err)
	}
	return string(pem), nil
}

// setupBackupInspection runs the inspection of new Backups. Without an
// image for the driver's Jobs (--staging-image) there is nothing to run
// them from, and it is not registered.
func setupBackupInspection(mgr ctrl.Manager, o Options, d deps) error {
	if o.StagingImage == "" {
		ctrl.Log.WithName("setup").Info("no --staging-image: Backups are not inspected (no manifests, no content-drop guard)")
		return nil
	}
	pem, err := o.s3CAPEM()
	if err != nil {
		return err
	}
	r := &inspection.Reconciler{
		Client: o.client(mgr), APIReader: mgr.GetAPIReader(), Recorder: d.events, Keys: d.keys, Policy: d.policy,
		Image: o.StagingImage, AllowedEndpointCIDRs: o.AllowedEndpointCIDRs, S3CAPEM: pem, Clock: o.Clock,
		MaxJobs: o.MaxInspectionJobs, MaxJobsPerNamespace: o.MaxInspectionJobsPerNamespace,
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

// setupCapture runs the point-in-time capture of the Plans that turned it
// on. Without an image for the driver's tenant workloads (--staging-image)
// there is nothing to run it from, and it is not registered.
func setupCapture(mgr ctrl.Manager, o Options, d deps) error {
	if o.StagingImage == "" {
		ctrl.Log.WithName("setup").Info("no --staging-image: no point-in-time capture")
		return nil
	}
	pem, err := o.s3CAPEM()
	if err != nil {
		return err
	}
	r := &keeper.Reconciler{
		Client: o.client(mgr), APIReader: mgr.GetAPIReader(), Recorder: d.events, Keys: d.keys, Policy: d.policy,
		Image: o.StagingImage, AllowedEndpointCIDRs: o.AllowedEndpointCIDRs, S3CAPEM: pem, Clock: o.passiveClock(),
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

func setupRehearsals(mgr ctrl.Manager, o Options, d deps) error {
	r := &rehearsal.Reconciler{
		Client:               o.client(mgr),
		Reader:               o.cached(mgr),
		LiveReader:           mgr.GetAPIReader(),
		Recorder:             d.events,
		Keys:                 d.keys,
		Policy:               d.policy,
		Image:                o.StagingImage,
		Census:               o.liveReader(mgr, d),
		AllowedEndpointCIDRs: o.AllowedEndpointCIDRs,
		Deadline:             o.RestoreDeadline,
		MaxJobs:              o.MaxRehearsalJobs,
		MaxJobsPerNamespace:  o.MaxRehearsalJobsPerNamespace,
	}
	pem, err := o.s3CAPEM()
	if err != nil {
		return err
	}
	r.S3CAPEM = pem
	return r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles})
}

// setupPlans runs the driver's own Plan scheduler; off
// (--disable-controllers=plan) where Cozystack's Plan controller schedules.
func setupPlans(mgr ctrl.Manager, o Options, d deps) error {
	r := &plan.Reconciler{
		Client:    o.client(mgr),
		APIReader: mgr.GetAPIReader(),
		Recorder:  d.events,
		Clock:     o.passiveClock(),
		Keys:      d.keys,
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

// setupPlanKeeper runs retention and drills for every Etcd Plan, whoever
// schedules it.
func setupPlanKeeper(mgr ctrl.Manager, o Options, d deps) error {
	r := &plankeeper.Reconciler{
		Client:    o.client(mgr),
		APIReader: mgr.GetAPIReader(),
		Recorder:  d.events,
		Clock:     o.passiveClock(),
		Keys:      d.keys,
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

// passiveClock is o.Clock, or the real clock.
func (o Options) passiveClock() clock.PassiveClock {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.RealClock{}
}

func setupBackupDeletion(mgr ctrl.Manager, o Options, d deps) error {
	r := &backupdeletion.Reconciler{
		Client:    o.client(mgr),
		APIReader: mgr.GetAPIReader(),
		Recorder:  d.events,
		Keys:      d.keys,
		Policy:    d.policy,
		Broker:    d.broker,
	}
	return r.SetupWithManager(mgr, o.MaxConcurrentReconciles)
}

func setupSafetyRetention(mgr ctrl.Manager, o Options, d deps) error {
	r := &safetyretention.Reconciler{Client: o.client(mgr), Keys: d.keys, Keep: o.SafetyBackupsKeep}
	return r.SetupWithManager(mgr)
}

func setupSharedCredentials(mgr ctrl.Manager, o Options, d deps) error {
	r := &sharedcreds.Reconciler{
		Client:         o.client(mgr),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       d.events,
		Tracker:        d.creds,
		ResyncInterval: o.SharedCredentialsResync,
	}
	return r.SetupWithManager(mgr)
}

func setupStrategyPolicies(mgr ctrl.Manager, o Options, d deps) error {
	r := &strategypolicy.Reconciler{Client: o.client(mgr), Recorder: d.events}
	return r.SetupWithManager(mgr)
}

// setupStrategyMigration moves the settings strategies hold in fields of
// the driver's earlier strategy CRD to their StrategyPolicies.
func setupStrategyMigration(mgr ctrl.Manager, o Options, d deps) error {
	r := &strategymigration.Reconciler{Client: o.client(mgr), APIReader: mgr.GetAPIReader(), Recorder: d.events}
	return r.SetupWithManager(mgr)
}
