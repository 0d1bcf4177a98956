package backupjob

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// A tenant can create BackupJobs as fast as it likes; each would start a
// snapshot Job against its etcd. The snapshots of one cluster that run at
// once are bounded: a job beyond the bound waits (Pending, with the
// snapshots it waits for named) and is woken when one of them ends.

// snapshotSlot holds job back while MaxSnapshotsPerCluster snapshots of the
// cluster run; nil when it may start its own. The caller holds the
// namespace's slot lock.
func (r *Reconciler) snapshotSlot(ctx context.Context, job *backupsv1alpha1.BackupJob) (*outcome, error) {
	if r.MaxSnapshotsPerCluster <= 0 {
		return nil, nil
	}
	var snaps etcdv1alpha2.EtcdSnapshotList
	if err := r.List(ctx, &snaps, client.InNamespace(job.Namespace)); err != nil {
		return nil, fmt.Errorf("list EtcdSnapshots in %s: %w", job.Namespace, err)
	}
	var running []string
	cached := map[string]bool{}
	for i := range snaps.Items {
		s := &snaps.Items[i]
		cached[s.Name] = true
		if s.Ended() || s.Spec.ClusterRef.Name != ClusterName || !s.DeletionTimestamp.IsZero() {
			continue
		}
		running = append(running, s.Name)
	}
	// Snapshots this driver created that the cache does not show yet.
	unseen := r.slots.unseen(job.Namespace, cached, r.Clock.Now())
	running = append(running, unseen...)
	if len(running) < r.MaxSnapshotsPerCluster {
		return nil, nil
	}
	shown := running
	if len(shown) > 3 {
		shown = append(shown[:3:3], "…")
	}
	o := waiting(backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupReasonWaitingForSnapshotSlot,
		"waiting: %d snapshot(s) of EtcdCluster %s/%s already run (%s) and at most %d run at once (--max-snapshots-per-cluster)",
		len(running), job.Namespace, ClusterName, strings.Join(shown, ", "), r.MaxSnapshotsPerCluster)
	if len(unseen) > 0 {
		// No watch event may follow for a snapshot the cache never showed.
		o.recheck = unseenFor
	}
	return &o, nil
}

// slotBook serialises the slot decisions of one namespace and remembers
// the snapshots started until the cache shows them.
type slotBook struct {
	locks [64]sync.Mutex
	mu    sync.Mutex
	// recent are the snapshots started per namespace, by name, with when.
	recent map[string]map[string]time.Time
}

// unseenFor is how long a started snapshot is counted although the cache
// does not show it (the cache catches up in milliseconds).
const unseenFor = 30 * time.Second

// lock takes ns's slot lock and returns its release.
func (b *slotBook) lock(ns string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))
	l := &b.locks[h.Sum32()%uint32(len(b.locks))]
	l.Lock()
	return l.Unlock
}

// started remembers a snapshot created in ns.
func (b *slotBook) started(ns, name string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recent == nil {
		b.recent = map[string]map[string]time.Time{}
	}
	if b.recent[ns] == nil {
		b.recent[ns] = map[string]time.Time{}
	}
	b.recent[ns][name] = now
}

// ended forgets a started snapshot that ended: handed to its Backup it
// leaves the cache, and must not then count as started but unseen.
func (b *slotBook) ended(ns, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.recent[ns], name)
	if len(b.recent[ns]) == 0 {
		delete(b.recent, ns)
	}
}

// unseen are the snapshots started in ns that cached does not hold yet;
// those it holds, or older than unseenFor, are forgotten.
func (b *slotBook) unseen(ns string, cached map[string]bool, now time.Time) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for name, at := range b.recent[ns] {
		if cached[name] || now.Sub(at) > unseenFor {
			delete(b.recent[ns], name)
			continue
		}
		out = append(out, name)
	}
	if len(b.recent[ns]) == 0 {
		delete(b.recent, ns)
	}
	return out
}

// slotFreed forgets a snapshot that ended (or went: handed to its Backup,
// history leaves the cache) in the slot book, then maps the event on. A
// snapshot that ends within unseenFor of its start must not keep counting
// as started but unseen: nothing else would wake the jobs it holds back.
func (r *Reconciler) slotFreed(next handler.MapFunc) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		r.slots.ended(o.GetNamespace(), o.GetName())
		return next(ctx, o)
	}
}

// snapshotEnds passes the events that free a slot: a snapshot ending or
// going away.
var snapshotEnds = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*etcdv1alpha2.EtcdSnapshot)
		cur, okNew := e.ObjectNew.(*etcdv1alpha2.EtcdSnapshot)
		return okOld && okNew && !old.Ended() && cur.Ended()
	},
}
