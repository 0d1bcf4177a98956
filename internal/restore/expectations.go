package restore

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Decisions read the manager's cache, which shows the driver's own writes
// a moment after they are made. A reconcile woken by one of its writes'
// events may run before the cache has the other: deciding on that view
// would repeat a write (harmlessly, since every write is guarded, but at
// the cost of an API request and a conflict). So each write records what
// the cache must show once it has caught up, and a reconcile whose view
// does not show it yet simply waits for the event that will.

// expectation holds when the observation reflects one write.
type expectation func(o *observation) bool

// expectationTTL bounds how long a reconcile waits for the cache: past it,
// it decides anyway (the guards make that safe).
const expectationTTL = 10 * time.Second

type pending struct {
	met     []expectation
	expires time.Time
}

// expectations are the unconfirmed writes of each RestoreJob.
type expectations struct {
	mu sync.Mutex
	m  map[types.UID]*pending
}

// expect records that the cache must show met before job is decided again.
func (e *expectations) expect(job types.UID, met expectation, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]*pending{}
	}
	p := e.m[job]
	if p == nil {
		p = &pending{}
		e.m[job] = p
	}
	p.met = append(p.met, met)
	p.expires = now.Add(expectationTTL)
}

// caughtUp reports whether o shows every write recorded for its job, and
// forgets those it shows.
func (e *expectations) caughtUp(o *observation) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.m[o.job.UID]
	if p == nil {
		return true
	}
	left := p.met[:0]
	for _, met := range p.met {
		if !met(o) {
			left = append(left, met)
		}
	}
	p.met = left
	if len(left) == 0 || !o.now.Before(p.expires) {
		delete(e.m, o.job.UID)
		return true
	}
	return false
}

// Expectations of the writes in act.go.

func jobChangedFrom(rv string) expectation {
	return func(o *observation) bool { return o.job.ResourceVersion != rv }
}

func snapshotChangedFrom(rv string) expectation {
	return func(o *observation) bool { return o.snapshot == nil || o.snapshot.ResourceVersion != rv }
}

func helmReleaseChangedFrom(rv string) expectation {
	return func(o *observation) bool { return o.hr == nil || o.hr.ResourceVersion != rv }
}

func clusterGoneOrDeleting(uid types.UID) expectation {
	return func(o *observation) bool {
		return o.cluster == nil || o.cluster.UID != uid || !o.cluster.DeletionTimestamp.IsZero()
	}
}

// before is what a write's expectation compares with.
type before struct {
	jobRV, snapshotRV, hrRV string
	clusterUID, leaseUID    types.UID
}

func beforeWrite(o *observation) before {
	b := before{jobRV: o.job.ResourceVersion}
	if o.snapshot != nil {
		b.snapshotRV = o.snapshot.ResourceVersion
	}
	if o.hr != nil {
		b.hrRV = o.hr.ResourceVersion
	}
	if o.cluster != nil {
		b.clusterUID = o.cluster.UID
	}
	if o.holder != nil {
		b.leaseUID = o.holder.LeaseUID
	}
	return b
}

// expectationOf is what the cache shows once step s, taken from b, is in it.
func expectationOf(s state, b before) expectation {
	switch s {
	case stateAddFinalizer, stateRemoveFinalizer, stateVerifyArtifact, statePinBase:
		return jobChangedFrom(b.jobRV)
	case stateAcquireClaim:
		return func(o *observation) bool { return o.holder != nil }
	case stateBreakStaleClaim, stateReleaseClaim:
		return func(o *observation) bool { return o.holder == nil || o.holder.LeaseUID != b.leaseUID }
	case stateCreateSafetySnapshot:
		return func(o *observation) bool { return o.snapshot != nil || o.safetyConflict != "" }
	case stateRecordSafetyBackup:
		return func(o *observation) bool { return o.safetyBackup != nil || o.safetyConflict != "" }
	case stateHandOverSnapshot:
		return snapshotChangedFrom(b.snapshotRV)
	case stateAbandonSafetySnapshot:
		return func(o *observation) bool { return o.snapshot == nil || !o.snapshot.DeletionTimestamp.IsZero() }
	case stateCapture:
		return func(o *observation) bool { return o.capture != nil || o.captureErr != nil }
	case stateSuspendHelmRelease, stateRestoreHelmRelease:
		return helmReleaseChangedFrom(b.hrRV)
	case stateDeleteCluster:
		return clusterGoneOrDeleting(b.clusterUID)
	case stateRecreate:
		return func(o *observation) bool { return o.cluster != nil }
	case stateDeleteCapture:
		return func(o *observation) bool { return o.capture == nil }
	case stateStage:
		// The claim is known (made by this process) or read once caught up.
		return func(o *observation) bool {
			return (o.staging != nil && (o.stagingClaim || o.stagingClaimUnread)) || o.stagingConflict != ""
		}
	case stateRestoreProgressDeadline:
		return func(o *observation) bool {
			return o.cluster == nil || o.cluster.UID != b.clusterUID || (progressDeadlineRestored(o) && (rollbackOf(o.job) != nil || sealed(o)))
		}
	case stateCarrySeal:
		return func(o *observation) bool { return o.capture == nil || o.capture.succeeded }
	case stateLiftFence:
		return func(o *observation) bool { return len(fencedByUs(o)) == 0 }
	}
	return nil
}
