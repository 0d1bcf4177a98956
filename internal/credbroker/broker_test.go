package credbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

func denied(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return err != nil && (code == "AccessDenied" || code == "InvalidAccessKeyId")
}

// Ensure writes each tenant a driver-owned, labelled Secret with its own
// key; the key writes its tenant's prefix only; no Secret in a tenant
// namespace holds the platform key; a second Ensure issues nothing.
func TestEnsureGivesEachTenantItsOwnKey(t *testing.T) {
	w := newWorld(t, "ensure", "ensure-a", "ensure-b")
	nameA, err := w.broker.Ensure(w.ctx, w.strategy, "ensure-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(nameA).To(Equal(credbroker.SecretName("ensure")))
	_, err = w.broker.Ensure(w.ctx, w.strategy, "ensure-b")
	w.g.Expect(err).NotTo(HaveOccurred())

	var s corev1.Secret
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: "ensure-a", Name: nameA}, &s)).To(Succeed())
	w.g.Expect(s.Labels).To(HaveKey(credbroker.StrategyLabel))
	w.g.Expect(s.Annotations[credbroker.ScopeAnnotation]).To(Equal(bucket + "/ensure-a/"))

	a, b := w.tenantKey("ensure-a"), w.tenantKey("ensure-b")
	w.g.Expect(a.AccessKeyID).NotTo(Equal(b.AccessKeyID))
	w.g.Expect(put(w.ctx, s3As(a), "ensure-a/etcd/s.db")).To(Succeed())
	w.g.Expect(denied(put(w.ctx, s3As(a), "ensure-b/etcd/s.db"))).To(BeTrue())
	w.g.Expect(denied(put(w.ctx, s3As(b), "ensure-a/etcd/s.db"))).To(BeTrue())
	w.noPlatformKeyInTenants()

	_, err = w.broker.Ensure(w.ctx, w.strategy, "ensure-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.tenantKey("ensure-a")).To(Equal(a), "a second Ensure replaced a valid key")
	w.g.Expect(w.identities()).To(HaveLen(2))
}

// A Secret of the broker's name that a tenant made is not overwritten.
func TestEnsureLeavesAForeignSecretAlone(t *testing.T) {
	w := newWorld(t, "foreign", "foreign-a")
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "foreign-a", Name: credbroker.SecretName("foreign")},
		StringData: map[string]string{s3object.AccessKeyIDKey: "mine", s3object.SecretAccessKeyKey: "mine"}}
	w.g.Expect(env.Client.Create(w.ctx, planted)).To(Succeed())
	_, err := w.broker.Ensure(w.ctx, w.strategy, "foreign-a")
	w.g.Expect(err).To(MatchError(credbroker.ErrForeignSecret))
	w.g.Expect(w.tenantKey("foreign-a").AccessKeyID).To(Equal("mine"))
	w.g.Expect(w.identities()).To(BeEmpty())
}

// Rotation in the middle of a snapshot does not fail it: the agent that
// read the old key at start keeps writing with it through the grace period;
// new agents get the new key; after the grace the old key is deleted and
// refused.
func TestRotationKeepsInFlightKeyUntilGraceEnds(t *testing.T) {
	w := newWorld(t, "rotate", "rotate-a")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "rotate-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	agent := s3As(w.tenantKey("rotate-a")) // a snapshot Pod starts
	old := w.tenantKey("rotate-a")

	next, err := w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(next).To(BeNumerically("<=", credbroker.SweepEvery))
	w.g.Expect(w.tenantKey("rotate-a")).To(Equal(old), "rotated before the interval")

	w.clock.SetTime(w.clock.Now().Add(credbroker.DefaultRotationInterval + time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	fresh := w.tenantKey("rotate-a")
	w.g.Expect(fresh.AccessKeyID).NotTo(Equal(old.AccessKeyID), "not rotated after the interval")
	w.g.Expect(put(w.ctx, agent, "rotate-a/etcd/in-flight.db")).To(Succeed(), "rotation broke the snapshot in flight")
	w.g.Expect(put(w.ctx, s3As(fresh), "rotate-a/etcd/next.db")).To(Succeed())
	ids := w.identities()
	w.g.Expect(ids).To(HaveLen(2))
	for _, id := range ids {
		if id.AccessKeyID == old.AccessKeyID {
			w.g.Expect(id.Expires).NotTo(BeZero(), "the old key was not given an expiry")
		}
	}

	w.clock.SetTime(w.clock.Now().Add(w.broker.Grace - time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(put(w.ctx, agent, "rotate-a/etcd/late.db")).To(Succeed(), "the old key died within the grace period")

	w.clock.SetTime(w.clock.Now().Add(2 * time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Eventually(func() bool { return denied(put(w.ctx, agent, "rotate-a/etcd/after.db")) }).
		WithTimeout(10*time.Second).Should(BeTrue(), "the old key outlived its grace")
	w.g.Expect(w.identities()).To(HaveLen(1))
	w.g.Expect(put(w.ctx, s3As(fresh), "rotate-a/etcd/next2.db")).To(Succeed())
	w.noPlatformKeyInTenants()
}

// A key the tenant Secret does not hold (a crash between issue and write,
// or a Secret the tenant deleted) is retired once it is older than
// YoungKeyGrace, not left valid forever, and keeps its own policy.
func TestSweepRetiresKeysNoSecretHolds(t *testing.T) {
	w := newWorld(t, "retire", "retire-a")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "retire-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	var s corev1.Secret
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Namespace: "retire-a", Name: credbroker.SecretName("retire")}, &s)).To(Succeed())
	w.g.Expect(env.Client.Delete(w.ctx, &s)).To(Succeed())
	// A key younger than YoungKeyGrace may have its Secret on the way.
	next, err := w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(next).To(BeNumerically("<=", credbroker.YoungKeyGrace))
	ids := w.identities()
	w.g.Expect(ids).To(HaveLen(1))
	w.g.Expect(ids[0].Expires).To(BeZero(), "a young key was retired")
	w.clock.SetTime(w.clock.Now().Add(credbroker.YoungKeyGrace))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	ids = w.identities()
	w.g.Expect(ids).To(HaveLen(1))
	w.g.Expect(ids[0].Expires).NotTo(BeZero())
	w.g.Expect(ids[0].Inherits).To(BeFalse(), "the retirement dropped the key's own policy")
}

// The identity of a namespace being deleted is removed; so are all of a
// strategy's identities and tenant Secrets when the strategy is deleted,
// after which its finalizer is released.
func TestNamespaceAndStrategyDeletionRemoveKeys(t *testing.T) {
	w := newWorld(t, "remove", "remove-a", "remove-b")
	r := &credbroker.Reconciler{Client: env.Client, Broker: w.broker}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Name: "remove"}}
	for _, ns := range w.tenants {
		_, err := w.broker.Ensure(w.ctx, w.strategy, ns)
		w.g.Expect(err).NotTo(HaveOccurred())
	}
	keyA := w.tenantKey("remove-a")
	_, err := r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(env.Client.Get(w.ctx, req.NamespacedName, w.strategy.Etcd)).To(Succeed())
	w.g.Expect(w.strategy.Finalizers).To(ContainElement(credbroker.Finalizer))

	// envtest runs no namespace controller: remove-a stays Terminating.
	w.g.Expect(env.Client.Delete(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "remove-a"}})).To(Succeed())
	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.identities()).To(HaveLen(1))
	w.g.Eventually(func() bool { return denied(put(w.ctx, s3As(keyA), "remove-a/etcd/x.db")) }).
		WithTimeout(10*time.Second).Should(BeTrue(), "the key of a deleted namespace still works")

	w.g.Expect(env.Client.Delete(w.ctx, w.strategy.Etcd)).To(Succeed())
	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.identities()).To(BeEmpty())
	err = env.Client.Get(w.ctx, client.ObjectKey{Namespace: "remove-b", Name: credbroker.SecretName("remove")}, &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the tenant Secret outlived its strategy: %v", err)
	err = env.Client.Get(w.ctx, req.NamespacedName, w.strategy.Etcd)
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the finalizer was not released: %v", err)
}

// Deletions of a brokered strategy's objects get the platform key, and
// only for objects in the namespace's own prefix; other Secrets are not
// brokered.
func TestDeletionKey(t *testing.T) {
	w := newWorld(t, "deletion", "deletion-a")
	name := credbroker.SecretName("deletion")
	creds, brokered, err := w.broker.DeletionKey(w.ctx, "deletion-a", name, bucket, "deletion-a/etcd/s.db")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(brokered).To(BeTrue())
	w.g.Expect(creds).To(Equal(w.platform))
	_, brokered, err = w.broker.DeletionKey(w.ctx, "deletion-a", name, bucket, "deletion-b/etcd/s.db")
	w.g.Expect(brokered).To(BeTrue())
	w.g.Expect(err).To(MatchError(credbroker.ErrOutOfScope))
	_, brokered, err = w.broker.DeletionKey(w.ctx, "deletion-a", name, "other-bucket", "deletion-a/etcd/s.db")
	w.g.Expect(err).To(MatchError(credbroker.ErrOutOfScope))
	w.g.Expect(brokered).To(BeTrue())
	_, brokered, err = w.broker.DeletionKey(w.ctx, "deletion-a", "tenant-s3", bucket, "deletion-a/etcd/s.db")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(brokered).To(BeFalse())
}

// countingReader counts the reads of one Secret.
type countingReader struct {
	client.Reader
	name  string
	reads *int
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if key.Name == c.name {
		*c.reads++
	}
	return c.Reader.Get(ctx, key, o, opts...)
}

// Every Ensure reads the tenant's key back from the provider, but reads
// the platform credential's Secret at most once per AdminKeyTTL: a
// backup costs the API server no more than before.
func TestEnsureReadsTheAdminSecretOncePerTTL(t *testing.T) {
	w := newWorld(t, "adminttl", "adminttl-a")
	reads := 0
	w.broker.Reader = countingReader{Reader: env.Client, name: w.strategy.Policy.CredentialBroker.AdminSecretRef.Name, reads: &reads}
	for range 3 {
		_, err := w.broker.Ensure(w.ctx, w.strategy, "adminttl-a")
		w.g.Expect(err).NotTo(HaveOccurred())
	}
	w.g.Expect(reads).To(Equal(1))
	w.clock.SetTime(w.clock.Now().Add(credbroker.AdminKeyTTL))
	_, err := w.broker.Ensure(w.ctx, w.strategy, "adminttl-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(reads).To(Equal(2))
}
