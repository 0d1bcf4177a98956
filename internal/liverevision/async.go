package liverevision

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// A read of a live revision waits on the tenant's etcd: on its Service,
// its TLS handshake, its answer, up to Reader.Timeout when nothing answers.
// Made on a restore worker, that wait held the worker: a few tenants whose
// etcd the driver cannot reach stopped every other tenant's restore for
// as long (20 restores at once went in waves of four, all ending at ~57 s
// instead of ~7 s). Reads makes each read on a goroutine of its own and
// wakes the restore when it ends; the restore's worker is free meanwhile,
// so an unreachable etcd delays only its own restore. A dry run's census
// (a walk of every key, up to CensusTimeout) runs the same way, off the
// rehearsal's workers, and its result is kept until the dry run ends: one
// census a dry run.

// Purpose tells the reads of one restore apart.
type Purpose int

const (
	// ForStaging is the read the staging Job's revision floor comes from.
	ForStaging Purpose = iota
	// BeforePurge is the look again just before the live cluster is
	// deleted: the staged revision must still be above what clients saw.
	BeforePurge
	// ForRehearsal is a dry run's census: the live counts and revision
	// it starts from and compares with.
	ForRehearsal
)

func (p Purpose) String() string {
	switch p {
	case BeforePurge:
		return "before-purge"
	case ForRehearsal:
		return "rehearsal"
	}
	return "staging"
}

// errNoReader is the result of a read with no way to make it.
var errNoReader = errors.New("the driver has no way to reach the tenant's etcd")

// Key names one RestoreJob's read.
type Key struct {
	Job     types.UID
	Purpose Purpose
}

// State is where a read stands.
type State int

const (
	// NotStarted: no read under the key (or this process forgot it).
	NotStarted State = iota
	// Running: the read has not ended.
	Running
	// Done: the read ended; its Result says how.
	Done
)

// Result is the end of a read.
type Result[T any] struct {
	// Value is what was read: a revision, a Census.
	Value T
	// Err is why it could not be read; for the operator's log
	// only (TenantMessage is what a tenant may see).
	Err error
	// Ended is when the read ended.
	Ended time.Time
	// Attempt counts the reads made under the key, this one included.
	Attempt int
}

// Reads runs reads off the caller's goroutine and keeps their results
// until the RestoreJob forgets them. Set Read (and Wake, Log) before use.
type Reads[T any] struct {
	// Read reads the etcd in a namespace (Reader.Revision,
	// Reader.Census); it must honour its context, which Timeout bounds.
	Read func(ctx context.Context, namespace string) (T, error)
	// Timeout bounds one read from the outside; zero means twice
	// DefaultTimeout.
	Timeout time.Duration
	// Slots bounds the reads running at once (what they hold in memory
	// adds up); zero means no bound. A read waits for a slot before its
	// Timeout starts.
	Slots int
	// Wake is told, when a read ends, which RestoreJob waits for it.
	Wake func(job types.NamespacedName)
	// Log receives the errors of failed reads (the operator's record).
	Log logr.Logger

	mu    sync.Mutex
	m     map[Key]*readEntry[T]
	slots chan struct{}
}

type readEntry[T any] struct {
	job       types.NamespacedName
	namespace string
	running   bool
	result    Result[T]
}

// Look says where the read under k stands and, once Done, how it ended.
func (r *Reads[T]) Look(k Key) (State, Result[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[k]
	switch {
	case e == nil:
		return NotStarted, Result[T]{}
	case e.running:
		return Running, e.result
	}
	return Done, e.result
}

// Busy reports whether a read of the etcd in namespace is running.
func (r *Reads[T]) Busy(namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.m {
		if e.running && e.namespace == namespace {
			return true
		}
	}
	return false
}

// Start reads the etcd in namespace for job's purpose k, unless such a
// read is running: a read that ended is made again (its result replaced
// when the new one ends). Wake is told job when it ends.
func (r *Reads[T]) Start(k Key, job types.NamespacedName, namespace string) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[Key]*readEntry[T]{}
	}
	if r.slots == nil && r.Slots > 0 {
		r.slots = make(chan struct{}, r.Slots)
	}
	slots := r.slots
	e := r.m[k]
	if e == nil {
		e = &readEntry[T]{job: job, namespace: namespace}
		r.m[k] = e
	}
	if e.running {
		r.mu.Unlock()
		return
	}
	e.running = true
	attempt := e.result.Attempt + 1
	r.mu.Unlock()

	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * DefaultTimeout
	}
	go func() {
		if slots != nil {
			slots <- struct{}{}
			defer func() { <-slots }()
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var v T
		err := errNoReader
		if r.Read != nil {
			v, err = r.Read(ctx, namespace)
		}
		cancel()
		if err != nil {
			r.Log.Info("could not read a tenant's etcd", "namespace", namespace,
				"restoreJob", job.String(), "purpose", k.Purpose, "attempt", attempt, "error", err.Error())
		}
		r.mu.Lock()
		if cur := r.m[k]; cur == e {
			e.running = false
			e.result = Result[T]{Value: v, Err: err, Ended: time.Now(), Attempt: attempt}
		}
		r.mu.Unlock()
		if r.Wake != nil {
			r.Wake(job)
		}
	}()
}

// Forget drops every read of job (its restore or dry run is over).
func (r *Reads[T]) Forget(job types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if k.Job == job {
			delete(r.m, k)
		}
	}
}

// ForgetName drops every read of the RestoreJobs named job, whatever
// their UID (a deleted one's last reconcile knows only its name).
func (r *Reads[T]) ForgetName(job types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.m {
		if e.job == job {
			delete(r.m, k)
		}
	}
}
