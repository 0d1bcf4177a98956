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
	planpkg "github.com/etcd-backup-driver/etcd-backup-driver/internal/plan"
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
	// Per Plan (the plan-name label of BackupJobs): first creation and
	// last end seen, how many succeeded, and how many were scheduled for
	// each minute.
	firstJob, lastEnd map[string]time.Time
	succeeded         map[string]int
	perMinute         map[string]map[time.Time]int
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
		peak:    map[string]int{}, firstJob: map[string]time.Time{}, lastEnd: map[string]time.Time{},
		succeeded: map[string]int{}, perMinute: map[string]map[time.Time]int{},
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
		if _, seen := f.firstJob[plan]; !seen {
			f.firstJob[plan] = time.Now()
			f.perMinute[plan] = map[time.Time]int{}
		}
		f.perMinute[plan][planpkg.JobScheduledAt(o.(*backupsv1alpha1.BackupJob)).Truncate(time.Minute)]++
	}
	if ended {
		delete(f.running[kind], key)
		f.done[kind][key] = true
		if kind == kindJob && ok && plan != "" {
			f.succeeded[plan]++
			f.lastEnd[plan] = time.Now()
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

// planFigures is what inFlight saw of one round of Plans.
type planFigures struct {
	// peakJobs and peakSnapshots are the most unfinished at once since
	// the last reset.
	peakJobs, peakSnapshots int
	// succeeded counts the Plans' BackupJobs that succeeded.
	succeeded int
	// minutes is how many distinct minutes the jobs were scheduled for,
	// busiest how many in the busiest one.
	minutes, busiest int
	// drained is the real time from the first job's creation to the last
	// one's end.
	drained time.Duration
}

// figures returns the peaks since the last reset and the figures of the
// BackupJobs of Plans named plan.
func (f *inFlight) figures(plan string) planFigures {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := planFigures{peakJobs: f.peak[kindJob], peakSnapshots: f.peak[kindSnapshot], succeeded: f.succeeded[plan],
		minutes: len(f.perMinute[plan])}
	for _, n := range f.perMinute[plan] {
		p.busiest = max(p.busiest, n)
	}
	if first, last := f.firstJob[plan], f.lastEnd[plan]; !first.IsZero() && last.After(first) {
		p.drained = last.Sub(first)
	}
	return p
}
