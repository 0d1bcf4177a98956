package credbroker_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// Deleting the StrategyPolicy is how an admin stops brokering (CEL refuses
// removing credentialBroker from it): the broker's settings go, so the
// keys they issued are removed first, as when the strategy goes. The
// policy holds the finalizer until then; the strategy stays, unbrokered,
// and lets go of it too.
func TestDeletingTheStrategyPolicyRemovesItsKeys(t *testing.T) {
	w := newWorld(t, "unbroker", "unbroker-a")
	r := &credbroker.Reconciler{Client: env.Client, Broker: w.broker}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Name: "unbroker"}}
	_, err := w.broker.Ensure(w.ctx, w.strategy, "unbroker-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.policy().Finalizers).To(ContainElement(credbroker.Finalizer))
	w.read()
	w.g.Expect(w.strategy.Finalizers).To(ContainElement(credbroker.Finalizer))

	w.g.Expect(env.Client.Delete(w.ctx, w.policy())).To(Succeed())
	w.read()
	w.g.Expect(w.strategy.Policy.Deleting).To(BeTrue())
	_, err = w.broker.Ensure(w.ctx, w.strategy, "unbroker-a")
	w.g.Expect(err).To(MatchError(credbroker.ErrStrategyDeleting), "a key issued now would outlive the removal")

	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.identities()).To(BeEmpty(), "the keys outlived the StrategyPolicy that brokered them")
	err = env.Client.Get(w.ctx, client.ObjectKey{Namespace: "unbroker-a", Name: credbroker.SecretName("unbroker")}, &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the tenant Secret outlived its StrategyPolicy: %v", err)
	err = env.Client.Get(w.ctx, req.NamespacedName, &driverv1alpha1.StrategyPolicy{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the StrategyPolicy's finalizer was not released: %v", err)

	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.read()
	w.g.Expect(w.strategy.Finalizers).NotTo(ContainElement(credbroker.Finalizer), "an unbrokered strategy is held")
	w.g.Expect(credbroker.Brokered(w.strategy)).To(BeFalse())
	// Unbrokered, its key ("{{ namespace }}/etcd/" on the suite's bucket)
	// may write into every brokered tenant's prefix: the overlap rule
	// would refuse the other tests' tenants while it exists.
	w.g.Expect(env.Client.Delete(w.ctx, w.strategy.Etcd)).To(Succeed())
}

// A brokered strategy whose bucket becomes a template (CEL on the strategy
// refused that before the broker settings left it) gets no key scoped to
// what the template renders: Ensure refuses, naming the StrategyPolicy,
// and the sweep leaves the keys issued for the literal bucket as they are.
func TestATemplatedBucketReScopesNoKey(t *testing.T) {
	w := newWorld(t, "templated", "templated-a")
	r := &credbroker.Reconciler{Client: env.Client, Broker: w.broker}
	req := ctrl.Request{NamespacedName: client.ObjectKey{Name: "templated"}}
	_, err := w.broker.Ensure(w.ctx, w.strategy, "templated-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	before := w.tenantKey("templated-a")
	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	ids := w.identities()
	w.g.Expect(ids).To(HaveLen(1))

	w.update(func(s *strategyv1alpha1.Etcd, _ *driverv1alpha1.StrategyPolicy) {
		s.Spec.Template.Destination.S3.Bucket = "{{ .Parameters.bucket }}"
	})
	_, err = w.broker.Ensure(w.ctx, w.strategy, "templated-a")
	w.g.Expect(err).To(MatchError(strategypolicy.ErrInvalid))
	w.g.Expect(err.Error()).To(ContainSubstring(`StrategyPolicy "templated"`))
	_, err = r.Reconcile(w.ctx, req)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.identities()).To(Equal(ids), "the sweep re-scoped, rotated or retired a key")
	w.g.Expect(w.tenantKey("templated-a")).To(Equal(before))
	w.g.Expect(w.works(before, "templated-a")).To(Succeed())
}
