package operator

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
)

// DefaultSnapshotJobDeadline is the operator's activeDeadlineSeconds on a
// snapshot Job: a Job whose Pod never starts (its credentials Secret is
// missing) fails only then.
const DefaultSnapshotJobDeadline = 1800 * time.Second

// Options configure the stand-in operator.
type Options struct {
	// EtcdBinary is the etcd executable members run.
	EtcdBinary string
	// DataDir holds the members' data folders (what their PVCs would hold).
	DataDir string
	// VolumesDir holds the folders standing for other claims (a staging
	// claim, a restore's source claim); empty means "volumes" beside
	// DataDir.
	VolumesDir string
	// PodsDir holds the staging Pods' folders (container logs, termination
	// messages, emptyDirs); empty means "pods" beside DataDir.
	PodsDir string
	// Executables maps a staging container's command (its path inside the
	// image, e.g. "/etcd-stage") to the local executable the kubelet
	// stand-in runs for it. A command not mapped keeps the Pod in
	// CreateContainerConfigError.
	Executables map[string]string
	// Containers, when set, makes the kubelet stand-in run the staging
	// Pods' containers from their images with podman (the sandbox's
	// container mode) instead of Executables, with their security
	// context, limits and volumes applied.
	Containers *container.Runtime
	// S3RootCAs verify the https S3 endpoints the snapshot agents write
	// to and restores read from (the platform's CA, which the operator
	// trusts); nil means the system's roots.
	S3RootCAs *x509.CertPool
	// SnapshotJobDeadline is the snapshot Jobs' activeDeadlineSeconds;
	// zero means DefaultSnapshotJobDeadline.
	SnapshotJobDeadline time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// APIServer is the API server's host and port, which the kubelet
	// stand-ins give every container as KUBERNETES_SERVICE_HOST and
	// KUBERNETES_SERVICE_PORT.
	APIServerHost, APIServerPort string
	// ResolveService maps a Service's host and port to the address it
	// reaches (the tenant etcd client Services'); the kubelet stand-ins
	// resolve the Service names in the arguments of Pods run as local
	// processes with it, as cluster DNS would.
	ResolveService func(host, port string) (string, bool)
	// HostsFile is the /etc/hosts of containers run from their images
	// (container mode), naming the Services, as cluster DNS would.
	HostsFile string
}

// Operator is a running stand-in: its controllers are registered with a
// manager by Setup and run with it.
type Operator struct {
	// Fleet knows the running member processes.
	Fleet *Fleet
	// Faults injects failures on request (see Faults).
	Faults *Faults
	// Snapshots reports what the snapshot agents moved.
	Snapshots *SnapshotStatsStore
	// Volumes are the folders standing for claims Pods mount.
	Volumes *Volumes
}

// Setup registers the stand-in's controllers (EtcdCluster, EtcdMember,
// EtcdSnapshot, the kubelet stand-ins that run snapshot Pods and the
// driver's staging Pods, and the volume reclaimer) with mgr.
// mgr's scheme must hold the driver's scheme and etcdmember.AddToScheme.
func Setup(mgr ctrl.Manager, o Options) (*Operator, error) {
	if o.EtcdBinary == "" || o.DataDir == "" {
		return nil, fmt.Errorf("stand-in operator: EtcdBinary and DataDir are required")
	}
	if o.SnapshotJobDeadline == 0 {
		o.SnapshotJobDeadline = DefaultSnapshotJobDeadline
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.VolumesDir == "" {
		o.VolumesDir = filepath.Join(filepath.Dir(o.DataDir), "volumes")
	}
	if o.PodsDir == "" {
		o.PodsDir = filepath.Join(filepath.Dir(o.DataDir), "pods")
	}
	op := &Operator{Fleet: NewFleet(o.DataDir), Faults: &Faults{}, Snapshots: newSnapshotStatsStore(), Volumes: &Volumes{Root: o.VolumesDir}}
	// Every write is strictly validated: a field the upstream schema does
	// not know fails here rather than being pruned.
	c := client.WithFieldValidation(mgr.GetClient(), metav1.FieldValidationStrict)
	reader := mgr.GetAPIReader()
	clusters := &clusterReconciler{client: c, reader: reader, fleet: op.Fleet, faults: op.Faults, now: o.Now}
	members := &memberReconciler{client: c, reader: reader, fleet: op.Fleet, faults: op.Faults, etcdBinary: o.EtcdBinary, volumes: op.Volumes, s3RootCAs: o.S3RootCAs}
	snapshots := &snapshotReconciler{client: c, reader: reader, agents: op.Snapshots, jobDeadline: o.SnapshotJobDeadline}
	kubelet := &kubelet{client: c, reader: reader, fleet: op.Fleet, agents: op.Snapshots, s3RootCAs: o.S3RootCAs}
	node := nodeServices{APIHost: o.APIServerHost, APIPort: o.APIServerPort, Resolve: o.ResolveService, HostsFile: o.HostsFile, Tokens: c}
	if o.Containers != nil {
		node.Resolve = nil // containers resolve names through HostsFile
	}
	pods := podAPI{client: c, reader: reader}
	staging := &stagingKubelet{podAPI: pods, volumes: op.Volumes, executables: o.Executables, podsDir: o.PodsDir, containers: o.Containers, node: node}
	captures := &captureKubelet{podAPI: pods, executables: o.Executables, podsDir: o.PodsDir, containers: o.Containers, node: node}
	reclaimer := &volumeReclaimer{client: c, volumes: op.Volumes}
	for _, setup := range []func(ctrl.Manager) error{clusters.setup, members.setup, snapshots.setup, kubelet.setup, staging.setup, captures.setup, reclaimer.setup} {
		if err := setup(mgr); err != nil {
			return nil, err
		}
	}
	return op, nil
}

// Faults injects the failures a test asks for; the zero value injects
// none. It is safe for concurrent use.
type Faults struct {
	mu sync.Mutex
	// bootstrap counts the incarnations of a cluster still to fail.
	bootstrap map[types.NamespacedName]int
	// failing are the cluster incarnations (UIDs) chosen to fail.
	failing map[types.UID]bool
	// joins counts the joining members of a cluster still to fail.
	joins map[types.NamespacedName]int
	// failingMembers are the members chosen to fail.
	failingMembers map[types.NamespacedName]bool
}

// FailBootstrap makes the next n incarnations of the EtcdCluster key fail to
// bootstrap, as if the seed member's Pod crash-looped (a broken image, a
// snapshot etcd cannot load): the seed never serves, the cluster never gets
// a cluster ID, and at its progress deadline it is Available=False /
// BootstrapFailed, which only deleting and re-creating it clears. An
// incarnation is counted when its seed member is created, so an in-place
// restore that re-creates the cluster consumes one; a rollback after it (a
// further incarnation) bootstraps normally when n was 1.
func (f *Faults) FailBootstrap(key types.NamespacedName, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bootstrap == nil {
		f.bootstrap = map[types.NamespacedName]int{}
	}
	f.bootstrap[key] += n
}

// claimBootstrapFailure decides, once per incarnation, whether it fails.
func (f *Faults) claimBootstrapFailure(key types.NamespacedName, uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing == nil {
		f.failing = map[types.UID]bool{}
	}
	if failing, decided := f.failing[uid]; decided {
		return failing
	}
	failing := f.bootstrap[key] > 0
	if failing {
		f.bootstrap[key]--
	}
	f.failing[uid] = failing
	return failing
}

// bootstrapFails reports whether the incarnation uid was chosen to fail.
func (f *Faults) bootstrapFails(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failing[uid]
}

// FailJoin makes the next n members that join the EtcdCluster key (every
// member after the seed, in any incarnation) never start, as if their Pods
// crash-looped: a scale-up then misses its progress deadline and the
// cluster is Available=False/DeadlineExceeded until its spec changes.
func (f *Faults) FailJoin(key types.NamespacedName, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.joins == nil {
		f.joins = map[types.NamespacedName]int{}
	}
	f.joins[key] += n
}

// claimJoinFailure decides whether a new joining member fails.
func (f *Faults) claimJoinFailure(cluster, member types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.joins[cluster] == 0 {
		return
	}
	f.joins[cluster]--
	if f.failingMembers == nil {
		f.failingMembers = map[types.NamespacedName]bool{}
	}
	f.failingMembers[member] = true
}

// memberFails reports whether a joining member was chosen to fail.
func (f *Faults) memberFails(member types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failingMembers[member]
}
