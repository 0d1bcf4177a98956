package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// workers is how many requests the harness has in flight when it sets up.
const workers = 32

// parallel runs f on every item with workers goroutines and fails b on the
// first error.
func parallel[T any](b *testing.B, items []T, f func(T) error) {
	b.Helper()
	ch := make(chan T)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := f(it); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d of %d failed; first: %v", len(errs), len(items), errs[0])
	}
}

// createTenants makes n tenant namespaces prefix-NNNN as the platform would,
// each with a healthy three-member cluster, and returns their names.
func createTenants(b *testing.B, prefix string, n int) []string {
	b.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	ctx := context.Background()
	parallel(b, names, func(ns string) error {
		for _, o := range plat.TenantObjects(ns) {
			if err := fast.Create(ctx, o); err != nil {
				return fmt.Errorf("create %T %s/%s: %w", o, ns, o.GetName(), err)
			}
		}
		return testenv.MarkHealthy(ctx, fast, client.ObjectKey{Namespace: ns, Name: "etcd"})
	})
	return names
}

// createBackupJobs starts one BackupJob named name in every tenant at once
// and returns when each was created.
func createBackupJobs(b *testing.B, tenants []string, name string) map[types.NamespacedName]time.Time {
	b.Helper()
	return createAll(b, tenants, func(ns string) client.Object {
		return &backupsv1alpha1.BackupJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: backupsv1alpha1.BackupJobSpec{BackupClassName: platform.ClassName,
				ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}},
		}
	})
}

// createAll creates the object obj makes for every tenant, in parallel, and
// returns when each one was created.
func createAll(b *testing.B, tenants []string, obj func(ns string) client.Object) map[types.NamespacedName]time.Time {
	b.Helper()
	var mu sync.Mutex
	created := map[types.NamespacedName]time.Time{}
	parallel(b, tenants, func(ns string) error {
		o := obj(ns)
		start := time.Now()
		if err := fast.Create(context.Background(), o); err != nil {
			return err
		}
		mu.Lock()
		created[client.ObjectKeyFromObject(o)] = start
		mu.Unlock()
		return nil
	})
	return created
}

// finishLine records, from watch events, when each job of a kind first
// reached its end.
type finishLine struct {
	mu     sync.Mutex
	done   map[types.NamespacedName]time.Time
	failed map[types.NamespacedName]string
	// last is each object as last seen, to show what is stuck.
	last map[types.NamespacedName]any
}

// watchFinish starts an informer on obj's kind; ended says whether an
// object has ended, and with what failure ("" for success).
func watchFinish(b *testing.B, obj client.Object, ended func(o any) (bool, string)) *finishLine {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	informers, err := cache.New(env.Config, cache.Options{Scheme: driverscheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	f := &finishLine{done: map[types.NamespacedName]time.Time{}, failed: map[types.NamespacedName]string{},
		last: map[types.NamespacedName]any{}}
	seen := func(o any) {
		key := client.ObjectKeyFromObject(o.(client.Object))
		f.mu.Lock()
		defer f.mu.Unlock()
		f.last[key] = o
		over, failure := ended(o)
		if !over {
			return
		}
		if _, ok := f.done[key]; !ok {
			f.done[key] = time.Now()
			if failure != "" {
				f.failed[key] = failure
			}
		}
	}
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("finish line: caches did not sync")
	}
	return f
}

// await waits until every key has ended, and fails b if one failed.
func (f *finishLine) await(b *testing.B, keys map[types.NamespacedName]time.Time, timeout time.Duration) map[types.NamespacedName]time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		out, left, stuck := map[types.NamespacedName]time.Time{}, 0, ""
		for k := range keys {
			if msg, bad := f.failed[k]; bad {
				f.mu.Unlock()
				b.Fatalf("%s failed: %s", k, msg)
			}
			if t, ok := f.done[k]; ok {
				out[k] = t
			} else {
				left++
				stuck = fmt.Sprintf("%s is at %+v", k, f.last[k])
			}
		}
		f.mu.Unlock()
		if left == 0 {
			return out
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d did not end within %s; %s", left, len(keys), timeout, stuck)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// backupJobEnded reports a BackupJob's end.
func backupJobEnded(o any) (bool, string) {
	j := o.(*backupsv1alpha1.BackupJob)
	switch j.Status.Phase {
	case backupsv1alpha1.BackupJobPhaseSucceeded:
		return true, ""
	case backupsv1alpha1.BackupJobPhaseFailed:
		return true, j.Status.Message
	}
	return false, ""
}

// restoreJobEnded reports a RestoreJob's end: terminal and let go.
func restoreJobEnded(o any) (bool, string) {
	j := o.(*backupsv1alpha1.RestoreJob)
	if !j.Status.Phase.IsTerminal() || len(j.Finalizers) > 0 {
		return false, ""
	}
	if j.Status.Phase != backupsv1alpha1.RestoreJobPhaseSucceeded {
		return true, j.Status.Message
	}
	return true, ""
}
