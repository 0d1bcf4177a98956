package rehearsal

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd-backup-driver.cozystack.io,resources=strategypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// CensusReader counts what a tenant's live etcd holds
// (liverevision.Reader.Census).
type CensusReader interface {
	Census(ctx context.Context, namespace string) (liverevision.Census, error)
}

// Reconciler drives dry-run RestoreJobs of the Etcd strategy.
type Reconciler struct {
	// Client writes: the RestoreJob's status and record annotation, the
	// Job, the Backup's status.underlyingResources.lastRehearsal.
	Client ctrl.Client
	// Reader is the manager's cache (RestoreJobs, Backups, strategies,
	// EtcdClusters).
	Reader ctrl.Reader
	// LiveReader reads from the API server: Secrets, Jobs and Pods, and
	// the Backup before its record is written.
	LiveReader ctrl.Reader
	// Recorder emits Events on RestoreJobs.
	Recorder events.EventRecorder
	// Keys verify Backups.
	Keys provenance.Keys
	// Policy decides which S3 endpoints may be used.
	Policy endpointpolicy.Policy
	// Image is the driver's image (the rehearsal Job runs its
	// /etcd-stage); empty refuses rehearsals.
	Image string
	// Census counts the live cluster; nil means it cannot be read (the
	// rehearsal then raises the revision by etcd's blind bump and reports
	// no counts now).
	Census CensusReader
	// AllowedEndpointCIDRs and S3CAPEM are passed to the Job.
	AllowedEndpointCIDRs []string
	S3CAPEM              string
	// Deadline bounds the Job; zero means DefaultDeadline.
	Deadline time.Duration
	// MaxJobs bounds the rehearsals running at once, MaxJobsPerNamespace
	// those of one namespace; a dry run beyond either waits, queued
	// (queue.go). 0 means no bound.
	MaxJobs, MaxJobsPerNamespace int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// censuses run the censuses off the workers (a census walks a whole
	// etcd the tenant controls, up to liverevision.CensusTimeout) and
	// keep each dry run's, which its end compares with, until it ends
	// (SetupWithManager).
	censuses *liverevision.Reads[liverevision.Census]
	wake     chan event.GenericEvent

	mu sync.Mutex
	// made are the Jobs this process created, by memoKey, until the
	// cache shows them.
	made map[string]*batchv1.Job
	// slots are the dry runs let start (queue.go).
	slots slots
}

// CensusSlots is how many censuses run at once, of different
// namespaces: each holds a page of keys and its counts in the driver's
// memory, within liverevision's bounds (18 MiB at the most, make bench:
// BenchmarkHostileCensusHeap), so three add up to 54 MiB of the driver's
// 256 Mi at the worst.
const CensusSlots = 3

// censusPoll is how often a dry run waiting for its census looks again,
// should the census's wake be lost.
const censusPoll = 30 * time.Second

// DefaultDeadline bounds a rehearsal Job.
const DefaultDeadline = time.Hour

// BackupWait is how long a dry run waits for its Backup to appear.
const BackupWait = 5 * time.Minute

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) deadline() time.Duration {
	if r.Deadline > 0 {
		return r.Deadline
	}
	return DefaultDeadline
}

// reads runs the censuses (SetupWithManager makes it with a wake; one
// made here wakes nothing, and a dry run looks again after censusPoll).
func (r *Reconciler) reads() *liverevision.Reads[liverevision.Census] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.censuses == nil {
		r.censuses = r.newCensuses(logr.Discard(), nil)
	}
	return r.censuses
}

// newCensuses makes the census runner: CensusSlots at once, each within
// the census's own timeout, waking the dry run through wake.
func (r *Reconciler) newCensuses(log logr.Logger, wake func(types.NamespacedName)) *liverevision.Reads[liverevision.Census] {
	c := &liverevision.Reads[liverevision.Census]{
		Timeout: liverevision.CensusTimeout + liverevision.DefaultTimeout,
		Slots:   CensusSlots,
		Wake:    wake,
		Log:     log,
	}
	if r.Census != nil {
		c.Read = r.Census.Census
	}
	return c
}

// memoKey is what the process keeps a dry run's Job under: its namespace
// and name, which a deleted RestoreJob's last reconcile still knows, and
// its UID, so a new RestoreJob of the same name starts afresh. Its
// censuses are kept by UID (and forgotten by name too).
func memoKey(rj *backupsv1alpha1.RestoreJob) string {
	return rj.Namespace + "/" + rj.Name + "/" + string(rj.UID)
}

// forgetName forgets every dry run kept under the name of nn.
func (r *Reconciler) forgetName(nn types.NamespacedName) {
	prefix := nn.Namespace + "/" + nn.Name + "/"
	r.reads().ForgetName(nn)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.made {
		if strings.HasPrefix(k, prefix) {
			delete(r.made, k)
		}
	}
}

// forget forgets the dry run rj: its census, its Job and its slot.
func (r *Reconciler) forget(rj *backupsv1alpha1.RestoreJob) {
	r.release(memoKey(rj))
	r.reads().Forget(rj.UID)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.made, memoKey(rj))
}

func (r *Reconciler) madeJob(uid string) *batchv1.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made[uid]
}

func (r *Reconciler) keepJob(uid string, j *batchv1.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.made == nil {
		r.made = map[string]*batchv1.Job{}
	}
	r.made[uid] = j
}
