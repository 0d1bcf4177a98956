package restore

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// madeClaims remembers the staging claims this process created itself (the
// API server answered 201, not AlreadyExists): while their Job runs, the
// claim is known to exist and to be this restore's without a live read.
// Once the Job has finished, the claim is read live all the same before
// the staging is judged. A restart forgets them and every claim is read
// again, so a crash between the Job's create and the claim's is still
// found (the claim is then made).
type madeClaims struct{ m sync.Map }

func (c *madeClaims) add(uid types.UID) { c.m.Store(uid, struct{}{}) }

func (c *madeClaims) has(uid types.UID) bool {
	_, ok := c.m.Load(uid)
	return ok
}

func (c *madeClaims) forget(uid types.UID) { c.m.Delete(uid) }
