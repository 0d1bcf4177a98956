package restore

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// madeClaims remembers the staging claims this process created itself (the
// API server answered 201, not AlreadyExists), with the UID it gave them:
// such a claim is known to be this restore's without a live read, while
// its Job runs, when the staging is judged, and at the hand-back, which
// patches it by that UID. A restart forgets them and every claim is read
// again, so a crash between the Job's create and the claim's is still
// found (the claim is then made).
type madeClaims struct{ m sync.Map }

func (c *madeClaims) add(job, claim types.UID) { c.m.Store(job, claim) }

func (c *madeClaims) has(job types.UID) bool {
	_, ok := c.claimUID(job)
	return ok
}

// claimUID is the UID of the claim this process made for job.
func (c *madeClaims) claimUID(job types.UID) (types.UID, bool) {
	v, ok := c.m.Load(job)
	if !ok {
		return "", false
	}
	return v.(types.UID), true
}

func (c *madeClaims) forget(job types.UID) { c.m.Delete(job) }

// uidOf is the UID of what this process made for job: the same record
// serves the staging Jobs and the re-created clusters (Reconciler.madeJob,
// Reconciler.madeCluster).
func (c *madeClaims) uidOf(job types.UID) types.UID {
	uid, _ := c.claimUID(job)
	return uid
}
