package restore

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Flux reconciles a HelmRelease within seconds of its resume. A restore
// that resumed one waits for that, still under its claim, before it
// releases the claim and writes its end, so the end carries Flux's verdict
// (HelmReleaseReconciled) and no status write follows it. The wait is
// bounded (fluxGrace from the first resume, however often the HelmRelease
// is suspended and resumed again in between): past it, with Flux absent or
// slow, the end is written as "reconciling" and the verdict follows it in
// a write of its own, as it always did. A HelmRelease whose resume this
// process did not see (a restart in between) is not waited for.

// fluxGrace bounds how long a hand-back waits for Flux.
const fluxGrace = 30 * time.Second

// resumes remembers when this process resumed each restore's HelmRelease.
// A restart forgets them, and the end is then written without waiting.
type resumes struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
}

func (r *resumes) add(uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]time.Time{}
	}
	for k, at := range r.m {
		// Past the grace an entry says nothing: jobs that ended (or
		// were deleted) leave nothing behind for long.
		if now.Sub(at) > fluxGrace {
			delete(r.m, k)
		}
	}
	if _, ok := r.m[uid]; ok {
		// A resume after a suspension in the grace does not start
		// it again: the claim is not held longer than fluxGrace.
		return
	}
	r.m[uid] = now
}

// at is when this process resumed uid's HelmRelease (zero when it did not).
func (r *resumes) at(uid types.UID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[uid]
}

// awaitFlux: the hand-back waits (under the claim) for Flux to reconcile
// the HelmRelease this process just resumed.
func awaitFlux(o *observation) (decision, bool) {
	if o.resumedAt.IsZero() || o.hr == nil || o.hr.Spec.Suspend {
		return decision{}, false
	}
	until := o.resumedAt.Add(fluxGrace)
	if !o.now.Before(until) {
		return decision{}, false
	}
	reconciling := string(backupsv1alpha1.ReasonHelmReleaseReconciling)
	c := helmReleaseOnConclude(o)
	if c == nil || c.Reason != reconciling {
		return decision{}, false
	}
	if next := helmReleaseReport(o, c); next == nil || next.Reason != reconciling {
		return decision{}, false
	}
	return decision{state: stateWaitHelmRelease, deadline: until}, true
}
