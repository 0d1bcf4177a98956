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
	r := &Reads{
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
	g.Expect(res.Revision).To(Equal(int64(77)))
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
	r := &Reads{
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
