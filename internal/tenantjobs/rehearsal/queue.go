package rehearsal

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// The rehearsal queue: every rehearsal Job holds three times its
// snapshot of a node's disk and half a GiB of memory, and a drill
// schedule can start one for every tenant at once. At most MaxJobs
// rehearsals run at once across the cluster and MaxJobsPerNamespace of
// one namespace; a dry run beyond them waits before its census, Pending
// with Ready RehearsalQueued naming the bound. When a slot frees, the
// oldest waiting dry run (by creation, then namespace and name) whose
// namespace has room takes it: one tenant's many dry runs wait behind
// each other, not in front of other tenants' drills, and every drill
// starts in its turn, well within its window (days). The bounds hold per
// driver process (per shard).

// slots are the dry runs this process let start whose start the cache
// may not show yet: they hold their slot until they end.
type slots struct {
	mu       sync.Mutex
	admitted map[string]bool // by memoKey
}

// started reports whether rj's rehearsal has started (its start is
// recorded): from then on it holds a slot until it ends.
func started(rj *backupsv1alpha1.RestoreJob) bool { return rj.Status.Rehearsal != nil }

// waitingDryRun reports whether rj is a dry run that has not ended.
func waitingDryRun(rj *backupsv1alpha1.RestoreJob) bool {
	return restoreoptions.IsDryRun(rj) && !rj.Status.Phase.IsTerminal() && rj.DeletionTimestamp.IsZero()
}

// setCaps sets the bounds (tests change them between runs).
func (r *Reconciler) setCaps(total, perNamespace int) {
	r.slots.mu.Lock()
	defer r.slots.mu.Unlock()
	r.MaxJobs, r.MaxJobsPerNamespace = total, perNamespace
}

// admit decides whether dry run rj may start its rehearsal now: "" when
// it may (it then holds a slot), else why it waits.
func (r *Reconciler) admit(ctx context.Context, rj *backupsv1alpha1.RestoreJob) (string, error) {
	r.slots.mu.Lock()
	defer r.slots.mu.Unlock()
	total, perNamespace := r.MaxJobs, r.MaxJobsPerNamespace
	key := memoKey(rj)
	if (total <= 0 && perNamespace <= 0) || r.slots.admitted[key] {
		return "", nil
	}
	var list backupsv1alpha1.RestoreJobList
	if err := r.Reader.List(ctx, &list); err != nil {
		return "", fmt.Errorf("list RestoreJobs to find a rehearsal slot: %w", err)
	}
	running, inNamespace := 0, map[string]int{}
	var queue []*backupsv1alpha1.RestoreJob
	live := map[string]bool{}
	self := false
	for i := range list.Items {
		o := &list.Items[i]
		if !waitingDryRun(o) {
			continue
		}
		k := memoKey(o)
		switch {
		case started(o) || r.slots.admitted[k]:
			live[k] = true
			running++
			inNamespace[o.Namespace]++
		case k == key:
			self = true
			queue = append(queue, o)
		case r.contends(ctx, o):
			queue = append(queue, o)
		}
	}
	if !self {
		queue = append(queue, rj)
	}
	for k := range r.slots.admitted {
		if !live[k] {
			delete(r.slots.admitted, k) // ended or gone
		}
	}
	sort.Slice(queue, func(i, j int) bool { return before(queue[i], queue[j]) })
	busy := inNamespace[rj.Namespace]
	free := total - running
	for _, o := range queue {
		if total > 0 && free <= 0 {
			break
		}
		if perNamespace > 0 && inNamespace[o.Namespace] >= perNamespace {
			continue
		}
		if memoKey(o) == key {
			if r.slots.admitted == nil {
				r.slots.admitted = map[string]bool{}
			}
			r.slots.admitted[key] = true
			return "", nil
		}
		free--
		inNamespace[o.Namespace]++
	}
	if perNamespace > 0 && busy >= perNamespace {
		return fmt.Sprintf("waiting for a rehearsal slot: %d rehearsals of namespace %s run and at most %d of one namespace run at once (--max-rehearsal-jobs-per-namespace)",
			busy, rj.Namespace, perNamespace), nil
	}
	if total > 0 && running >= total {
		return fmt.Sprintf("waiting for a rehearsal slot: %d rehearsals run and at most %d run at once (--max-rehearsal-jobs)", running, total), nil
	}
	return fmt.Sprintf("waiting for a rehearsal slot: older dry runs take the free ones (at most %d run at once (--max-rehearsal-jobs), %d of one namespace)",
		total, perNamespace), nil
}

// contends reports whether dry run o, which has not started, competes
// for a slot: it waits at this gate, or will as soon as it is reconciled
// (a burst of new dry runs is let in by age, not by which reconcile came
// first). One another driver rehearses (a Backup of another strategy) or
// one still waiting for its Backup does not.
func (r *Reconciler) contends(ctx context.Context, o *backupsv1alpha1.RestoreJob) bool {
	if queued(o) {
		return true
	}
	var b backupsv1alpha1.Backup
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.BackupRef.Name}, &b)
	return err == nil && strategyv1alpha1.IsEtcd(b.Spec.StrategyRef)
}

// before orders the queue: the older dry run first, then by namespace
// and name (creation times are in seconds).
func before(a, b *backupsv1alpha1.RestoreJob) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// release gives up the slot of a dry run that ended.
func (r *Reconciler) release(key string) {
	r.slots.mu.Lock()
	defer r.slots.mu.Unlock()
	delete(r.slots.admitted, key)
}

// queue records that rj waits for a slot (Pending, Ready False
// RehearsalQueued with why), once: a dry run's own events do not wake it
// again for nothing.
func (r *Reconciler) queue(ctx context.Context, rj *backupsv1alpha1.RestoreJob, why string) error {
	c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady)
	if rj.Status.Phase == backupsv1alpha1.RestoreJobPhasePending && c != nil &&
		c.Reason == string(backupsv1alpha1.ReasonRehearsalQueued) && c.Message == textlimit.Message(why) {
		return nil
	}
	base := rj.DeepCopy()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhasePending
	rj.Status.Message = why
	meta.SetStatusCondition(&rj.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: string(backupsv1alpha1.ReasonRehearsalQueued), Message: textlimit.Message(why), ObservedGeneration: rj.Generation})
	if err := r.Client.Status().Patch(ctx, rj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record that RestoreJob %s/%s waits for a rehearsal slot: %w", rj.Namespace, rj.Name, err)
	}
	return nil
}

// queuedOf: a dry run that started (and so ends, or goes, holding a
// slot until then) or ended wakes the dry runs that wait for a slot; a
// waiting dry run woken for nothing writes nothing. (One let start that
// goes before it started frees its slot at the next wake.)
func (r *Reconciler) queuedOf(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		rj, ok := obj.(*backupsv1alpha1.RestoreJob)
		if !ok || !restoreoptions.IsDryRun(rj) || (waitingDryRun(rj) && !started(rj)) {
			return nil
		}
		var list backupsv1alpha1.RestoreJobList
		if err := c.List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list RestoreJobs to wake the rehearsal queue")
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			o := &list.Items[i]
			if waitingDryRun(o) && !started(o) && queued(o) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return out
	}
}

// queued reports whether rj waits for a rehearsal slot.
func queued(rj *backupsv1alpha1.RestoreJob) bool {
	c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady)
	return c != nil && c.Reason == string(backupsv1alpha1.ReasonRehearsalQueued)
}
