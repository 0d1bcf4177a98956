// Package restore is the Etcd driver's in-place restore. A RestoreJob whose
// Backup was taken by the Etcd strategy is checked before anything is
// touched (the request, the Backup's provenance, its S3 object with the
// recorded credentials, the target cluster), then claims the cluster,
// takes a safety snapshot, captures the live EtcdCluster, suspends the
// HelmRelease, replaces the cluster with one bootstrapped from the Backup's
// exact object, and hands the application back. A restore that fails after
// the old cluster is gone re-creates it from the safety Backup.
//
// Each reconcile observes the world (observe.go), decides one step with a
// pure function (state.go and the decide*.go files), and takes it; every
// API write of the package is taken by act.go's act or report (the writes
// themselves in act.go, safety_writes.go, staging.go and planes.go). A
// crash between any two writes is
// survived because the next reconcile decides afresh from what it sees.
package restore

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
)

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backupclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=strategy.backups.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.cozystack.io,resources=etcds,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch;delete;patch,resourceNames=etcd
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=create
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=helm.toolkit.fluxcd.io,resources=helmreleases,verbs=get;list;watch;patch,resourceNames=etcd
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete;patch,namespace=etcd-backup-driver
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;delete,namespace=etcd-backup-driver
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete
// +kubebuilder:rbac:groups=kamaji.clastix.io,resources=tenantcontrolplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kamaji.clastix.io,resources=datastores,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Reconciler drives RestoreJobs of the Etcd strategy.
type Reconciler struct {
	// Client writes, and reads the cluster-scoped configuration (classes,
	// strategies) and applications from the cache.
	Client client.Client
	// Reader reads what decisions rest on (the manager's cache).
	Reader client.Reader
	// LiveReader reads from the API server: Secrets, and what the steps
	// that record or destroy something confirm first.
	LiveReader client.Reader
	// Recorder emits Events on RestoreJobs.
	Recorder events.EventRecorder
	// Deadline is the default restore deadline.
	Deadline time.Duration
	// Namespace is the driver's own namespace, where captures live.
	Namespace string
	// Claims are the restore claims, in the driver's namespace.
	Claims claim.Store
	// Keys verify Backups and sign safety Backups.
	Keys provenance.Keys
	// Policy decides which S3 endpoints may be used.
	Policy endpointpolicy.Policy
	// Schema says whether the installed RestoreJob CRD makes specs
	// immutable; nil assumes the driver's own CRD.
	Schema *servedschema.Schema
	// StagingImage is the staging Job's image (the driver's own); empty
	// refuses restores that raise the revision.
	StagingImage string
	// Revisions reads a tenant etcd's live revision; nil means it cannot
	// be read (the revision is then raised by the documented bump). Reads
	// are made off the workers (liverevision.Reads).
	Revisions RevisionReader
	// AllowedEndpointCIDRs and S3CAPEM are passed to the staging Job, which
	// applies the same endpoint policy as the driver.
	AllowedEndpointCIDRs []string
	S3CAPEM              string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Broker writes back the brokered key Secret a Backup names when the
	// tenant deleted it; nil leaves such restores to fail with
	// CredentialsUnavailable.
	Broker CredentialBroker

	// expect holds the writes the cache has not shown yet.
	expect expectations
	// made holds the staging claims this process created; madeJob and
	// madeCluster the staging Jobs and the clusters it created, by UID
	// (an object by the same name with another UID is not the restore's).
	made        madeClaims
	madeJob     madeClaims
	madeCluster madeClaims
	// resumes holds when this process resumed each restore's HelmRelease.
	resumes resumes
	// creds holds the credentials read before a claim for its check.
	creds heldCreds
	// told holds which ignored changes of dryRun an Event told.
	told restoreoptions.Told
	// sharing remembers which namespaces share which tenant's etcd (the
	// control planes a restore may fence).
	sharing cpfence.Sharing
	// reads makes the live-revision reads off the workers and wakes the
	// restore when one ends (through wake).
	reads *liverevision.Reads[int64]
	wake  chan event.GenericEvent
}

// RevisionReader reads the revision a tenant's live etcd has reached
// (internal/liverevision).
type RevisionReader interface {
	Revision(ctx context.Context, namespace string) (int64, error)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile observes the world, decides one step, writes the status that
// step implies, and takes it. The step's own write wakes the next
// reconcile through the watches; a reconcile never takes a second step on
// a view that cannot show the first one yet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	o, err := r.observe(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o == nil {
		// The job is gone; had it gone without its hand-back (its
		// finalizer removed by hand), its claim is released now.
		return ctrl.Result{}, r.Claims.ReleaseGone(ctx, r.LiveReader, claim.Target{Namespace: req.Namespace, Cluster: clusterName})
	}
	if !r.expect.caughtUp(o) {
		// The event of a write this view lacks is on its way.
		return ctrl.Result{RequeueAfter: expectationTTL}, nil
	}
	if err := r.readLate(ctx, o); err != nil {
		return ctrl.Result{}, err
	}
	d := decide(o, r.Deadline)
	log.V(1).Info("restore step", "state", d.state, "reason", d.reason)
	if d.state == stateIgnore {
		r.tellDryRunKept(o)
	}
	wrote, err := r.report(ctx, o, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	if d.state.waits() {
		return waitResult(o, d), nil
	}
	acted, err := r.act(ctx, o, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch d.state {
	case stateStage:
		// The claim is not watched: look again once it exists.
		return ctrl.Result{RequeueAfter: stagingRecheck}, nil
	case stateReadRevision:
		// The read's end wakes the job; this is the fallback.
		return ctrl.Result{RequeueAfter: revisionPoll}, nil
	}
	if !wrote && !acted {
		// Nothing changed, so no event will come: the cache showed a
		// state the driver already moved past. Look again shortly.
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, nil
}

// stagingRecheck is how soon a restore that started its staging looks
// again (the Job's own events wake it for the rest).
const stagingRecheck = time.Second

// revisionPoll is how soon a restore waiting for a live-revision read
// looks again should the read's wake-up be lost (it never is but for a
// full channel).
const revisionPoll = 5 * time.Second

// staleRetry is how soon a reconcile that found nothing to write looks
// again (the cache catching up takes milliseconds).
const staleRetry = 200 * time.Millisecond

// waitResult wakes a waiting job at its deadline; watches wake it earlier.
func waitResult(o *observation, d decision) ctrl.Result {
	if d.deadline.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(d.deadline.Sub(o.now), time.Second)}
}
