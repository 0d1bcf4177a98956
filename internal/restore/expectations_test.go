package restore

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A view that does not show the driver's own last write waits for the
// event that will; one that does is decided; an expectation that never
// comes true stops holding the job back after its TTL.
func TestExpectations(t *testing.T) {
	var e expectations
	o := world()
	o.job.ResourceVersion = "10"
	e.expect(o.job.UID, jobChangedFrom("10"), o.now)
	e.expect(o.job.UID, expectationOf(stateDeleteCluster, beforeWrite(o)), o.now)
	if e.caughtUp(o) {
		t.Fatal("a view older than the writes was decided")
	}
	o.job.ResourceVersion = "11"
	if e.caughtUp(o) {
		t.Fatal("a view that shows one of two writes was decided")
	}
	now := metav1.Now()
	o.cluster = o.cluster.DeepCopy()
	o.cluster.DeletionTimestamp = &now
	if !e.caughtUp(o) {
		t.Fatal("a view that shows every write was held back")
	}
	e.expect(o.job.UID, func(*observation) bool { return false }, o.now)
	o.now = o.now.Add(expectationTTL + time.Second)
	if !e.caughtUp(o) {
		t.Fatal("an expectation outlived its TTL")
	}
}
