package sharedcreds

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// readAll plays the controller: every dirty namespace's Secret holds the
// key id keys[namespace].
func readAll(t *Tracker, strategy string, keys map[string]string) {
	todo, _ := t.dirty(strategy, 1<<20)
	for _, tg := range todo {
		if id, ok := keys[tg.namespace]; ok {
			t.record(strategy, tg, id)
		} else {
			t.drop(strategy, tg)
		}
	}
}

func TestReportGroupsNamespacesByKey(t *testing.T) {
	g := NewWithT(t)
	tr := NewTracker(clocktesting.NewFakeClock(time.Now()))
	keys := map[string]string{"a": "K1", "b": "K1", "c": "K2", "d": "K3", "e": "K3", "f": "K3", "g": "K4"}
	for ns := range keys {
		tr.Observe("s3", ns, "creds")
	}
	tr.Observe("other", "h", "creds")
	g.Expect(tr.report("s3").Pending).To(Equal(7), "nothing is known before the Secrets are read")
	readAll(tr, "s3", keys)
	r := tr.report("s3")
	g.Expect(r.Pending).To(BeZero())
	g.Expect(r.Namespaces).To(Equal(7))
	g.Expect(r.Sharing).To(Equal([]string{"a", "b", "d", "e", "f"}))
	g.Expect(r.SharedKeys).To(Equal(2))

	c := r.Condition(3)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal("SharedAccessKey"))
	g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(c.Message).To(HavePrefix("5 namespaces share 2 S3 access keys (a, b, d, …) — "))
	for _, id := range []string{"K1", "K2", "K3", "K4"} {
		g.Expect(c.Message).NotTo(ContainSubstring(id))
	}

	isolated := Report{Namespaces: 4}.Condition(1)
	g.Expect(isolated.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(isolated.Reason).To(Equal("CredentialsIsolated"))
	g.Expect(Report{Sharing: []string{"x", "y"}, SharedKeys: 1}.Condition(1).Message).To(HavePrefix("2 namespaces share one S3 access key (x, y) — "))
}

func TestObserveWakesOnlyOnNews(t *testing.T) {
	g := NewWithT(t)
	tr := NewTracker(nil)
	tr.Observe("s3", "a", "creds")
	g.Expect(tr.wakeCh).To(HaveLen(1))
	readAll(tr, "s3", map[string]string{"a": "K1"})
	for range 5 {
		tr.Observe("s3", "a", "creds")
	}
	g.Expect(tr.wakeCh).To(HaveLen(1), "the same Secret again is no news: no read, no reconcile")
	tr.Observe("s3", "a", "creds-v2")
	g.Expect(tr.wakeCh).To(HaveLen(2))
	todo, _ := tr.dirty("s3", 10)
	g.Expect(todo).To(Equal([]target{{"a", "creds-v2"}}))

	// A read of the old name that ends after the rename is not recorded.
	tr.record("s3", target{"a", "creds"}, "K1")
	g.Expect(tr.report("s3").Pending).To(Equal(1))
	tr.drop("s3", target{"a", "creds"})
	g.Expect(tr.report("s3").Pending).To(Equal(1), "nor is a drop of the old name")
}

func TestResyncKeepsWhatStillBacksUp(t *testing.T) {
	g := NewWithT(t)
	clk := clocktesting.NewFakeClock(time.Now())
	tr := NewTracker(clk)
	tr.Observe("s3", "job-recent", "rendered")
	tr.Observe("s3", "job-old", "rendered")
	tr.Observe("s3", "job-and-backup", "rendered")
	tr.resync("s3", map[string]string{"backup-only": "recorded", "job-and-backup": "recorded"})
	readAll(tr, "s3", map[string]string{"job-recent": "K", "job-old": "K", "job-and-backup": "K", "backup-only": "K"})
	g.Expect(tr.report("s3").Sharing).To(HaveLen(4))

	clk.Step(ForgetAfter)
	tr.Observe("s3", "job-recent", "rendered")
	due, _ := tr.resyncDue("s3", time.Hour)
	g.Expect(due).To(BeTrue())
	tr.resync("s3", map[string]string{"job-and-backup": "recorded"})
	todo, _ := tr.dirty("s3", 10)
	g.Expect(todo).To(Equal([]target{{"job-and-backup", "rendered"}, {"job-recent", "rendered"}}),
		"a BackupJob's rendered name wins over a Backup's; a namespace with neither a recent job nor a Backup is forgotten")
	due, _ = tr.resyncDue("s3", time.Hour)
	g.Expect(due).To(BeFalse())

	tr.Forget("s3")
	g.Expect(tr.report("s3")).To(Equal(Report{}))
}

func TestDigestsAreKeyedPerProcess(t *testing.T) {
	g := NewWithT(t)
	a, b := newHasher(), newHasher()
	g.Expect(a.sum("AKIA1")).To(Equal(a.sum("AKIA1")))
	g.Expect(a.sum("AKIA1")).NotTo(Equal(a.sum("AKIA2")))
	g.Expect(a.sum("AKIA1")).NotTo(Equal(b.sum("AKIA1")), "another process's key gives another digest")
}

// TestMemoryPer10000Namespaces measures what the Tracker holds for a
// strategy with 10,000 namespaces (docs/scale.md).
func TestMemoryPer10000Namespaces(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := NewTracker(nil)
	for i := range 10000 {
		ns := fmt.Sprintf("tenant-%s-%05d", strings.Repeat("x", 8), i)
		tr.Observe("s3", ns, "etcd-s3-credentials")
		tr.record("s3", target{ns, "etcd-s3-credentials"}, "AKIASHAREDSHARED")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perNS := float64(after.HeapAlloc-before.HeapAlloc) / 10000
	t.Logf("tracker heap for 10,000 namespaces: %.1f MiB (%.0f bytes each)", float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), perNS)
	NewWithT(t).Expect(perNS).To(BeNumerically("<", 400))
	NewWithT(t).Expect(tr.report("s3").Sharing).To(HaveLen(10000))
}
