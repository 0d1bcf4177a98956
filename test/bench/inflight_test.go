package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// Kinds inFlight counts.
const (
	kindJob      = "BackupJob"
	kindSnapshot = "EtcdSnapshot"
)

// inFlight counts, from watch events, the BackupJobs and EtcdSnapshots that
// exist and have not finished, and the most there were at once since the
// last reset. It also notes, per Plan, when its BackupJobs appeared and how
// many have finished.
type inFlight struct {
	mu      sync.Mutex
	running map[string]map[types.NamespacedName]bool
	done    map[string]map[types.NamespacedName]bool
	peak    map[string]int
	// Per Plan (the plan-name label of BackupJobs): first and last
	// creation seen, and how many succeeded.
	firstJob, lastJob map[string]time.Time
	succeeded         map[string]int
}

// watchInFlight starts informers on BackupJobs and EtcdSnapshots until b ends.
func watchInFlight(b *testing.B) *inFlight {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	informers, err := cache.New(env.Config, cache.Options{Scheme: driverscheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	f := &inFlight{
		running: map[string]map[types.NamespacedName]bool{kindJob: {}, kindSnapshot: {}},
		done:    map[string]map[types.NamespacedName]bool{kindJob: {}, kindSnapshot: {}},
		peak:    map[string]int{}, firstJob: map[string]time.Time{}, lastJob: map[string]time.Time{},
		succeeded: map[string]int{},
	}
	for _, w := range []struct {
		obj  client.Object
		kind string
	}{{&backupsv1alpha1.BackupJob{}, kindJob}, {&etcdv1alpha2.EtcdSnapshot{}, kindSnapshot}} {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			b.Fatal(err)
		}
		kind := w.kind
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { f.seen(kind, o, true) },
			UpdateFunc: func(_, o any) { f.seen(kind, o, false) },
			DeleteFunc: func(o any) { f.gone(kind, o) },
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("in flight: caches did not sync")
	}
	return f
}

// finished reports whether o has ended, and whether it succeeded.
func finished(o any) (ended, ok bool) {
	switch o := o.(type) {
	case *backupsv1alpha1.BackupJob:
		return o.Status.Phase.IsTerminal(), o.Status.Phase == backupsv1alpha1.BackupJobPhaseSucceeded
	case *etcdv1alpha2.EtcdSnapshot:
		p := o.Status.Phase
		return p == etcdv1alpha2.SnapshotPhaseComplete || p == etcdv1alpha2.SnapshotPhaseFailed, p == etcdv1alpha2.SnapshotPhaseComplete
	}
	return false, false
}

func (f *inFlight) seen(kind string, o any, added bool) {
	obj := o.(client.Object)
	key := client.ObjectKeyFromObject(obj)
	ended, ok := finished(o)
	plan := obj.GetLabels()[backupsv1alpha1.PlanNameLabel]
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done[kind][key] {
		return
	}
	if kind == kindJob && plan != "" && added {
		now := time.Now()
		if _, seen := f.firstJob[plan]; !seen {
			f.firstJob[plan] = now
		}
		f.lastJob[plan] = now
	}
	if ended {
		delete(f.running[kind], key)
		f.done[kind][key] = true
		if kind == kindJob && ok && plan != "" {
			f.succeeded[plan]++
		}
		return
	}
	f.running[kind][key] = true
	f.peak[kind] = max(f.peak[kind], len(f.running[kind]))
}

func (f *inFlight) gone(kind string, o any) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running[kind], client.ObjectKeyFromObject(obj))
}

// reset starts counting peaks afresh.
func (f *inFlight) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for kind, r := range f.running {
		f.peak[kind] = len(r)
	}
}

// figures returns the peaks since the last reset, and for Plans named plan
// how many BackupJobs succeeded and when the first and last appeared.
func (f *inFlight) figures(plan string) (jobs, snapshots, succeeded int, first, last time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak[kindJob], f.peak[kindSnapshot], f.succeeded[plan], f.firstJob[plan], f.lastJob[plan]
}
