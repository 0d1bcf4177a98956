package backupjob

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// A snapshot that ends, or leaves the cache as history, within unseenFor
// of its start no longer holds its cluster's slot: the next job would
// otherwise wait with nothing left to wake it (seen in make bench: one of
// a thousand tenants' fourth round stuck WaitingForSnapshotSlot).
func TestEndedSnapshotFreesItsSlotAtOnce(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	now := time.Now()
	r.slots.started("tenant-a", "round-02-x", now)
	g.Expect(r.slots.unseen("tenant-a", nil, now.Add(time.Second))).To(ConsistOf("round-02-x"))

	woken := 0
	mapper := r.slotFreed(func(context.Context, client.Object) []reconcile.Request { woken++; return nil })
	mapper(context.Background(), &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "round-02-x"}})
	g.Expect(woken).To(Equal(1))
	g.Expect(r.slots.unseen("tenant-a", nil, now.Add(2*time.Second))).To(BeEmpty())
}
