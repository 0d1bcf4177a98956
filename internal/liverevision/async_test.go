package liverevision

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// Fault (issue 32, item 7): a read of an etcd that does not answer runs on
// its own goroutine until its timeout: the caller (a restore worker) is
// free at once, and told when the read ends.
func TestReadsRunOffTheCaller(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	woken := make(chan types.NamespacedName, 4)
	var mu sync.Mutex
	calls := 0
	r := &Reads[int64]{
		Read: func(ctx context.Context, ns string) (int64, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 {
				select {
				case <-release:
				case <-ctx.Done():
					return 0, ctx.Err()
				}
				return 0, errors.New("dial tcp 10.0.0.1:2379: i/o timeout")
			}
			return 77, nil
		},
		Timeout: 5 * time.Second,
		Wake:    func(job types.NamespacedName) { woken <- job },
	}
	key := Key{Job: "u1", Purpose: ForStaging}
	job := types.NamespacedName{Namespace: "tenant-a", Name: "restore"}
	start := time.Now()
	r.Start(key, job, "tenant-a")
	g.Expect(time.Since(start)).To(BeNumerically("<", 100*time.Millisecond))
	st, _ := r.Look(key)
	g.Expect(st).To(Equal(Running))
	r.Start(key, job, "tenant-a") // no second read while one runs
	close(release)
	g.Eventually(woken).Should(Receive(Equal(job)))
	st, res := r.Look(key)
	g.Expect(st).To(Equal(Done))
	g.Expect(res.Err).To(HaveOccurred())
	g.Expect(res.Attempt).To(Equal(1))

	// Made again: the second attempt reads.
	r.Start(key, job, "tenant-a")
	g.Eventually(woken).Should(Receive())
	st, res = r.Look(key)
	g.Expect(st).To(Equal(Done))
	g.Expect(res.Value).To(Equal(int64(77)))
	g.Expect(res.Attempt).To(Equal(2))
	mu.Lock()
	g.Expect(calls).To(Equal(2))
	mu.Unlock()

	// Another purpose is another read; Forget drops the job's reads.
	st, _ = r.Look(Key{Job: "u1", Purpose: BeforePurge})
	g.Expect(st).To(Equal(NotStarted))
	r.Forget("u1")
	st, _ = r.Look(key)
	g.Expect(st).To(Equal(NotStarted))
}

// The outer timeout ends a read whose Read ignores nothing but its
// context.
func TestReadsTimeOut(t *testing.T) {
	g := NewWithT(t)
	woken := make(chan types.NamespacedName, 1)
	r := &Reads[int64]{
		Read:    func(ctx context.Context, _ string) (int64, error) { <-ctx.Done(); return 0, ctx.Err() },
		Timeout: 200 * time.Millisecond,
		Wake:    func(job types.NamespacedName) { woken <- job },
	}
	key := Key{Job: "u2"}
	r.Start(key, types.NamespacedName{Namespace: "n", Name: "j"}, "n")
	g.Eventually(woken).WithTimeout(2 * time.Second).Should(Receive())
	_, res := r.Look(key)
	g.Expect(errors.Is(res.Err, context.DeadlineExceeded)).To(BeTrue())
}

// Slots bounds the reads running at once: a census holds a page and its
// counts in the driver's memory, so many dry runs at once must not add
// up. Two reads hold the slots until released; the third ran beside them
// when seen failing with the wait for a slot taken out. ForgetName drops
// a RestoreJob's reads by its name.
func TestReadsWaitForASlot(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	started := make(chan string, 3)
	var mu sync.Mutex
	inFlight, most := 0, 0
	r := &Reads[int64]{
		Read: func(ctx context.Context, ns string) (int64, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			started <- ns
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			return 1, nil
		},
		Timeout: time.Minute,
		Slots:   2,
		Wake:    func(types.NamespacedName) {},
	}
	keys := map[string]Key{}
	for _, ns := range []string{"a", "b", "c"} {
		keys[ns] = Key{Job: types.UID(ns), Purpose: ForRehearsal}
		r.Start(keys[ns], types.NamespacedName{Namespace: ns, Name: "dry-run"}, ns)
	}
	<-started
	<-started
	g.Consistently(started).ShouldNot(Receive(), "a third read beside the two holding the slots")
	close(release)
	<-started
	for _, k := range keys {
		g.Eventually(func() State { st, _ := r.Look(k); return st }).Should(Equal(Done))
	}
	mu.Lock()
	g.Expect(most).To(Equal(2), "reads running at once")
	mu.Unlock()

	r.ForgetName(types.NamespacedName{Namespace: "c", Name: "dry-run"})
	st, _ := r.Look(keys["c"])
	g.Expect(st).To(Equal(NotStarted))
	st, _ = r.Look(keys["a"])
	g.Expect(st).To(Equal(Done))
}
