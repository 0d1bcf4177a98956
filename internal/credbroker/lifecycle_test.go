package credbroker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Every key the broker ever hands out is probed on the real MinIO for what
// a tenant key must never do (escapes), for its whole life: fresh, after
// the server restarts, retired because the tenant deleted its Secret, and
// rotated out. A retired or rotated key keeps its tenant's scope while it
// lives out its grace; it never gains the platform credential's rights.
func TestEveryKeyStaysInItsScopeForItsWholeLife(t *testing.T) {
	w := newWorld(t, "life", "life-a")
	ns := "life-a"
	_, err := w.broker.Ensure(w.ctx, w.strategy, ns)
	w.g.Expect(err).NotTo(HaveOccurred())
	fresh := w.tenantKey(ns)
	w.g.Expect(w.escapes(fresh, ns)).To(BeEmpty(), "a fresh key")
	w.g.Expect(w.works(fresh, ns)).To(Succeed())

	w.g.Expect(server.Restart()).To(Succeed())
	w.g.Expect(w.escapes(fresh, ns)).To(BeEmpty(), "a key after the server restarted")
	w.g.Expect(w.works(fresh, ns)).To(Succeed())

	// The tenant copies its key and deletes the Secret; the next sweep
	// (past the grace of a young key) retires the copy.
	var s corev1.Secret
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: ns, Name: credbroker.SecretName("life")}, &s)).To(Succeed())
	w.g.Expect(env.Client.Delete(w.ctx, &s)).To(Succeed())
	w.clock.SetTime(w.clock.Now().Add(credbroker.YoungKeyGrace + time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.escapes(fresh, ns)).To(BeEmpty(), "a key retired after its Secret was deleted")
	w.g.Expect(w.works(fresh, ns)).To(Succeed(), "a retired key stops working before its grace ends")

	// The next backup gets a new key; 30 days on, the sweep rotates it.
	_, err = w.broker.Ensure(w.ctx, w.strategy, ns)
	w.g.Expect(err).NotTo(HaveOccurred())
	second := w.tenantKey(ns)
	w.g.Expect(second.AccessKeyID).NotTo(Equal(fresh.AccessKeyID))
	w.g.Expect(w.escapes(second, ns)).To(BeEmpty(), "a key issued after a retirement")
	w.clock.SetTime(w.clock.Now().Add(credbroker.DefaultRotationInterval + time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	third := w.tenantKey(ns)
	w.g.Expect(third.AccessKeyID).NotTo(Equal(second.AccessKeyID), "not rotated")
	w.g.Expect(w.escapes(second, ns)).To(BeEmpty(), "a rotated-out key")
	w.g.Expect(w.works(second, ns)).To(Succeed(), "a rotated-out key stops working before its grace ends")
	w.g.Expect(w.escapes(third, ns)).To(BeEmpty(), "the key a rotation issued")

	w.g.Expect(server.Restart()).To(Succeed())
	for _, k := range []s3object.Credentials{fresh, second, third} {
		w.g.Expect(w.escapes(k, ns)).To(BeEmpty(), "after a second restart")
	}
}

// A sweep that runs while Ensure issues a key sees the key before the
// Secret holds it. It must not retire it: the Secret then hands out a key
// that expires (and, on MinIO, lost its scope with the retirement).
func TestSweepDuringIssueLeavesTheNewKeyAlone(t *testing.T) {
	w := newWorld(t, "race", "race-a", "race-b", "race-c")
	w.broker.Client = testenv.SlowSecretCreates{Client: env.Client, Delay: 400 * time.Millisecond}
	for _, ns := range w.tenants {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = w.broker.Sweep(w.ctx, w.strategy)
			}
		}()
		_, err := w.broker.Ensure(w.ctx, w.strategy, ns)
		close(stop)
		wg.Wait()
		w.g.Expect(err).NotTo(HaveOccurred())
		key := w.tenantKey(ns)
		w.g.Expect(w.escapes(key, ns)).To(BeEmpty(), "the key issued during a sweep")
		for _, id := range w.identities() {
			if id.AccessKeyID == key.AccessKeyID {
				w.g.Expect(id.Expires.IsZero()).To(BeTrue(), "a sweep retired the key the Secret holds")
			}
		}
	}
}

// sweepInsideCreate runs a whole sweep inside the window between a key's
// issue and the Secret create that hands it out: every sweep lands in the
// window, where a delay alone is shorter than one sweep against MinIO.
type sweepInsideCreate struct {
	client.Client
	sweep func()
}

func (s sweepInsideCreate) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	if _, ok := o.(*corev1.Secret); ok {
		s.sweep()
	}
	return s.Client.Create(ctx, o, opts...)
}

// A sweep that runs after a key is issued and before its Secret exists,
// deterministically: the key is young, so the sweep leaves it alone.
func TestASweepInsideTheIssueWindowLeavesTheKeyAlone(t *testing.T) {
	w := newWorld(t, "window", "window-a")
	w.broker.Client = sweepInsideCreate{Client: env.Client, sweep: func() {
		_, err := w.broker.Sweep(w.ctx, w.strategy)
		w.g.Expect(err).NotTo(HaveOccurred())
	}}
	_, err := w.broker.Ensure(w.ctx, w.strategy, "window-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	key := w.tenantKey("window-a")
	w.g.Expect(w.escapes(key, "window-a")).To(BeEmpty())
	ids := w.identities()
	w.g.Expect(ids).To(HaveLen(1))
	w.g.Expect(ids[0].AccessKeyID).To(Equal(key.AccessKeyID))
	w.g.Expect(ids[0].Expires.IsZero()).To(BeTrue(), "a sweep retired the key the Secret holds")
}
