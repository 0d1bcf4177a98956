package sharedcreds

import (
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// wakeBuffer bounds the wake-ups waiting for the controller. A wake-up lost
// to a full buffer costs only time: the namespace is read at the next
// wake-up or resync of its strategy.
const wakeBuffer = 1024

// Tracker remembers, per strategy, which namespaces back up with it, the
// credentials Secret each renders and a keyed hash of that Secret's access
// key id. It is safe for concurrent use; memory is one small entry per
// (strategy, namespace) pair.
type Tracker struct {
	clock  clock.PassiveClock
	hash   hasher
	wakeCh chan event.TypedGenericEvent[*strategyv1alpha1.Etcd]

	mu         sync.Mutex
	strategies map[string]*strategyState
}

// strategyState is what the Tracker knows of one strategy.
type strategyState struct {
	namespaces map[string]*entry
	// resynced is when the namespaces were last rediscovered; zero means
	// never (a resync is due).
	resynced time.Time
}

// entry is one namespace of a strategy.
type entry struct {
	secret string
	// fromJob: the Secret name is the one a BackupJob rendered, which wins
	// over the name a Backup recorded; observed is when it was last seen.
	fromJob  bool
	observed time.Time
	digest   digest
	// known: digest was read from secret; dirty: secret is to be read.
	known, dirty bool
}

// ForgetAfter is how long a namespace that holds no Backup of a strategy
// stays known after its last BackupJob for it: longer than a weekly Plan's
// interval.
const ForgetAfter = 8 * 24 * time.Hour

// NewTracker returns an empty Tracker with a fresh hashing key; clk (nil
// for the real clock) times observations and resyncs.
func NewTracker(clk clock.PassiveClock) *Tracker {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tracker{
		clock:      clk,
		hash:       newHasher(),
		wakeCh:     make(chan event.TypedGenericEvent[*strategyv1alpha1.Etcd], wakeBuffer),
		strategies: map[string]*strategyState{},
	}
}

// Observe records that a BackupJob in namespace renders the credentials
// Secret secret for strategy. It never blocks and reads nothing: when the
// namespace or its Secret name is new, it wakes the controller, which reads
// the Secret.
func (t *Tracker) Observe(strategy, namespace, secret string) {
	t.mu.Lock()
	st := t.state(strategy)
	e := st.namespaces[namespace]
	wake := e == nil || e.secret != secret
	if e == nil {
		e = &entry{}
		st.namespaces[namespace] = e
	}
	if wake {
		e.secret, e.dirty, e.known = secret, true, false
	}
	e.fromJob, e.observed = true, t.clock.Now()
	t.mu.Unlock()
	if wake {
		t.wake(strategy)
	}
}

func (t *Tracker) wake(strategy string) {
	ev := event.TypedGenericEvent[*strategyv1alpha1.Etcd]{Object: &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: strategy}}}
	select {
	case t.wakeCh <- ev:
	default:
	}
}

// state returns strategy's state, creating it. t.mu must be held.
func (t *Tracker) state(strategy string) *strategyState {
	st, ok := t.strategies[strategy]
	if !ok {
		st = &strategyState{namespaces: map[string]*entry{}}
		t.strategies[strategy] = st
	}
	return st
}

// resyncDue reports whether strategy's namespaces should be rediscovered,
// and when the next resync is due after that.
func (t *Tracker) resyncDue(strategy string, interval time.Duration) (bool, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(strategy)
	now := t.clock.Now()
	if st.resynced.IsZero() || !now.Before(st.resynced.Add(interval)) {
		return true, now.Add(interval)
	}
	return false, st.resynced.Add(interval)
}

// resync replaces strategy's namespaces with those found (namespace ->
// Secret recorded by its newest Backup) and those a BackupJob rendered in the
// last ForgetAfter, and marks every one to be read again.
func (t *Tracker) resync(strategy string, found map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(strategy)
	now := t.clock.Now()
	for ns, e := range st.namespaces {
		secret, has := found[ns]
		switch {
		case e.fromJob && now.Sub(e.observed) < ForgetAfter:
		case has:
			if !e.fromJob && e.secret != secret {
				e.secret, e.known = secret, false
			}
		default:
			delete(st.namespaces, ns)
			continue
		}
		e.dirty = true
	}
	for ns, secret := range found {
		if _, ok := st.namespaces[ns]; !ok {
			st.namespaces[ns] = &entry{secret: secret, dirty: true}
		}
	}
	st.resynced = now
}

// target is a namespace whose Secret is to be read.
type target struct{ namespace, secret string }

// dirty returns up to limit namespaces of strategy to read, in name order,
// and whether more remain.
func (t *Tracker) dirty(strategy string, limit int) ([]target, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []target
	for ns, e := range t.state(strategy).namespaces {
		if e.dirty {
			out = append(out, target{ns, e.secret})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace < out[j].namespace })
	if len(out) > limit {
		return out[:limit], true
	}
	return out, false
}

// record stores the digest of accessKeyID for tg, unless the namespace's
// Secret name changed while it was read.
func (t *Tracker) record(strategy string, tg target, accessKeyID string) {
	d := t.hash.sum(accessKeyID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.state(strategy).namespaces[tg.namespace]; e != nil && e.secret == tg.secret {
		e.digest, e.known, e.dirty = d, true, false
	}
}

// drop forgets tg's namespace: it is gone, or its Secret is gone or holds
// no key.
func (t *Tracker) drop(strategy string, tg target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state(strategy)
	if e := st.namespaces[tg.namespace]; e != nil && e.secret == tg.secret {
		delete(st.namespaces, tg.namespace)
	}
}

// Forget drops everything known about strategy (it was deleted).
func (t *Tracker) Forget(strategy string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.strategies, strategy)
}

// report summarises strategy's namespaces.
func (t *Tracker) report(strategy string) Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	byDigest := map[digest][]string{}
	var r Report
	for ns, e := range t.state(strategy).namespaces {
		if !e.known {
			r.Pending++
			continue
		}
		r.Namespaces++
		byDigest[e.digest] = append(byDigest[e.digest], ns)
	}
	for _, group := range byDigest {
		if len(group) > 1 {
			r.SharedKeys++
			r.Sharing = append(r.Sharing, group...)
		}
	}
	sort.Strings(r.Sharing)
	return r
}
