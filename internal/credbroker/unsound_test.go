package credbroker_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

func rootAdmin(w *world) *brokerminio.Admin {
	a, err := brokerminio.NewAdmin(server.Endpoint, server.RootUser, server.RootPassword, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	return a
}

// strip does what `mc admin user svcacct edit` (or enable, or disable)
// does to a service account: an update-service-account that carries no
// policy, after which MinIO drops the account's own policy.
func strip(w *world, accessKeyID string) {
	root := rootAdmin(w)
	body := map[string]string{"newStatus": "on"}
	w.g.Expect(root.Raw(w.ctx, http.MethodPost, "/update-service-account", url.Values{"accessKey": {accessKeyID}}, body, true, nil)).To(Succeed())
	info, err := root.InfoServiceAccount(w.ctx, accessKeyID)
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(info.ImpliedPolicy).To(BeTrue(), "the update did not strip the policy: the test proves nothing")
}

// A key whose own policy another admin tool dropped still reaches its
// tenant's scope only (its parent is the tenant's own user); the next
// Ensure, and the next sweep, delete it at once and hand out a new key.
func TestAKeyThatLostItsPolicyStaysInScopeAndIsReplaced(t *testing.T) {
	w := newWorld(t, "stripped", "stripped-a", "stripped-b")
	for _, ns := range w.tenants {
		_, err := w.broker.Ensure(w.ctx, w.strategy, ns)
		w.g.Expect(err).NotTo(HaveOccurred())
	}
	a := w.tenantKey("stripped-a")
	strip(w, a.AccessKeyID)
	w.g.Expect(w.escapes(a, "stripped-a")).To(BeEmpty(), "a key without its own policy")

	_, err := w.broker.Ensure(w.ctx, w.strategy, "stripped-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	a2 := w.tenantKey("stripped-a")
	w.g.Expect(a2.AccessKeyID).NotTo(Equal(a.AccessKeyID), "Ensure kept a key without its own policy")
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, a.AccessKeyID)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the stripped key was not deleted at once: %v", err)
	w.g.Expect(w.works(a2, "stripped-a")).To(Succeed())

	b := w.tenantKey("stripped-b")
	strip(w, b.AccessKeyID)
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	b2 := w.tenantKey("stripped-b")
	w.g.Expect(b2.AccessKeyID).NotTo(Equal(b.AccessKeyID), "the sweep kept a key without its own policy")
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, b.AccessKeyID)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the stripped key was not deleted at once: %v", err)
	w.g.Expect(w.escapes(b2, "stripped-b")).To(BeEmpty())
}

// A tenant's prefix that would hold another brokered strategy's tenants
// (namespace "tnt" of a strategy with root "", against a strategy with
// root "tnt/" on the same bucket) gets no key, whichever strategy was made
// or changed last; a key it had before the change is deleted by the sweep;
// the other strategy and the strategy's other tenants go on.
func TestATenantPrefixHoldingAnotherStrategysIsRefused(t *testing.T) {
	const own = "overlap" // a bucket of their own: every other test's strategy has root "" on "tenants"
	root := s3As(rootKey())
	old := newWorld(t, "ovl-old", "tnt", "ovl-c")
	w := old
	w.g.Expect(root.MakeBucket(w.ctx, own, minio.MakeBucketOptions{})).To(Succeed())
	old.update(func(s *strategyv1alpha1.Etcd, p *driverv1alpha1.StrategyPolicy) {
		p.Spec.CredentialBroker.PrefixRoot = "first/"
		s.Spec.Template.Destination.S3.Bucket = own
		s.Spec.Template.Destination.S3.Key = "first/{{ .Application.metadata.namespace }}/etcd/"
	})
	_, err := old.broker.Ensure(old.ctx, old.strategy, "tnt")
	w.g.Expect(err).NotTo(HaveOccurred())
	before := old.tenantKey("tnt")

	young := newWorld(t, "ovl-young", "ovl-b")
	young.update(func(s *strategyv1alpha1.Etcd, p *driverv1alpha1.StrategyPolicy) {
		p.Spec.CredentialBroker.PrefixRoot = "tnt/"
		s.Spec.Template.Destination.S3.Bucket = own
		s.Spec.Template.Destination.S3.Key = "tnt/{{ .Application.metadata.namespace }}/etcd/"
	})
	_, err = young.broker.Ensure(young.ctx, young.strategy, "ovl-b")
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = s3As(young.tenantKey("ovl-b")).PutObject(w.ctx, own, "tnt/ovl-b/etcd/s.db", strings.NewReader("secret"), 6, minio.PutObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())

	// The admin now changes the older strategy's root to "".
	old.update(func(s *strategyv1alpha1.Etcd, p *driverv1alpha1.StrategyPolicy) {
		p.Spec.CredentialBroker.PrefixRoot = ""
		s.Spec.Template.Destination.S3.Key = "{{ .Application.metadata.namespace }}/etcd/"
	})
	_, err = old.broker.Ensure(old.ctx, old.strategy, "tnt")
	w.g.Expect(err).To(MatchError(credbroker.ErrOverlappingScopes))
	w.g.Expect(err.Error()).To(ContainSubstring(`"ovl-young"`))
	_, err = old.broker.Sweep(old.ctx, old.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, before.AccessKeyID)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the sweep left the key of the tenant whose prefix now holds another strategy's: %v", err)
	_, err = getObject(w.ctx, s3As(old.tenantKey("tnt")), own, "tnt/ovl-b/etcd/s.db")
	w.g.Expect(err).To(HaveOccurred(), "tenant tnt of the older strategy reads the younger strategy's tenant's snapshot")

	// Everyone else goes on.
	_, err = old.broker.Ensure(old.ctx, old.strategy, "ovl-c")
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = young.broker.Ensure(young.ctx, young.strategy, "ovl-b")
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = getObject(w.ctx, s3As(young.tenantKey("ovl-b")), own, "tnt/ovl-b/etcd/s.db")
	w.g.Expect(err).NotTo(HaveOccurred())
}

// A strategy that brokers no keys, on the bucket of a brokered one, writes
// every tenant's snapshots under its key's literal start "nbo-shared/": the
// brokered strategy's namespace "nbo-shared" (root "") would get exactly
// that prefix, and so every snapshot of the other strategy. It gets no
// key, whichever strategy came first; the sweep deletes the key it had;
// the brokered strategy's other tenants go on.
func TestATenantPrefixHoldingANonBrokeredStrategysObjectsIsRefused(t *testing.T) {
	const own = "nonbrokered" // a bucket of its own: the plain strategy overlaps nothing else
	w := newWorld(t, "nbo-brokered", "nbo-shared", "nbo-other")
	w.g.Expect(s3As(rootKey()).MakeBucket(w.ctx, own, minio.MakeBucketOptions{})).To(Succeed())
	w.update(func(s *strategyv1alpha1.Etcd, _ *driverv1alpha1.StrategyPolicy) {
		s.Spec.Template.Destination.S3.Bucket = own
	})
	_, err := w.broker.Ensure(w.ctx, w.strategy, "nbo-shared")
	w.g.Expect(err).NotTo(HaveOccurred())
	before := w.tenantKey("nbo-shared")

	// The platform adds a strategy with a shared key copied to its
	// tenants; one of them backs up.
	plain := &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "nbo-plain"}, Spec: strategyv1alpha1.EtcdSpec{
		Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
			Bucket: own, Endpoint: server.Endpoint, Key: "nbo-shared/{{ .Application.metadata.namespace }}/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "shared-key"},
		}}},
	}}
	plainPolicy := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "nbo-plain"},
		Spec: driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true}}
	w.g.Expect(env.Client.Create(w.ctx, plainPolicy)).To(Succeed())
	w.g.Expect(env.Client.Create(w.ctx, plain)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(w.ctx, plain); _ = env.Client.Delete(w.ctx, plainPolicy) })
	const victims = "nbo-shared/victim/etcd-20260101.db"
	_, err = s3As(rootKey()).PutObject(w.ctx, own, victims, strings.NewReader("secret"), 6, minio.PutObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())

	_, err = w.broker.Ensure(w.ctx, w.strategy, "nbo-shared")
	w.g.Expect(err).To(MatchError(credbroker.ErrOverlappingScopes))
	w.g.Expect(err.Error()).To(ContainSubstring(`"nbo-plain"`))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, before.AccessKeyID)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the sweep left the key whose prefix holds the plain strategy's snapshots: %v", err)
	_, err = getObject(w.ctx, s3As(w.tenantKey("nbo-shared")), own, victims)
	w.g.Expect(err).To(HaveOccurred(), "brokered tenant nbo-shared reads another tenant's snapshot of the plain strategy")

	// A prefix neither starts nor is started by "nbo-shared/" goes on.
	_, err = w.broker.Ensure(w.ctx, w.strategy, "nbo-other")
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = s3As(w.tenantKey("nbo-other")).PutObject(w.ctx, own, "nbo-other/etcd/probe.db", strings.NewReader("probe"), 5, minio.PutObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())
}

// A tenant that writes its own broker Secret naming another key's access
// key id (ids are not secret: presigned URLs and logs show them) makes the
// broker issue it a key of its own, and deletes nothing: not another
// tenant's key, not a key of root another application uses.
func TestAForgedSecretDeletesNoOtherKey(t *testing.T) {
	w := newWorld(t, "forge", "forge-attacker", "forge-victim")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "forge-victim")
	w.g.Expect(err).NotTo(HaveOccurred())
	victim := w.tenantKey("forge-victim")
	other, err := rootAdmin(w).AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: "loki",
		Policy: []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::loki/*"]}]}`)})
	w.g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = rootAdmin(w).DeleteServiceAccount(w.ctx, other.AccessKey) }()

	name := credbroker.SecretName("forge")
	for _, target := range []string{victim.AccessKeyID, other.AccessKey} {
		_ = env.Client.Delete(w.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "forge-attacker", Name: name}})
		forged := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "forge-attacker", Name: name,
				Labels:      map[string]string{credbroker.StrategyLabel: credbroker.Group("forge")[4:12]},
				Annotations: map[string]string{credbroker.ScopeAnnotation: bucket + "/forge-attacker/"}},
			Data: map[string][]byte{s3object.AccessKeyIDKey: []byte(target), s3object.SecretAccessKeyKey: []byte("x")},
		}
		w.g.Expect(env.Client.Create(w.ctx, forged)).To(Succeed())
		_, err = w.broker.Ensure(w.ctx, w.strategy, "forge-attacker")
		w.g.Expect(err).NotTo(HaveOccurred())
		_, err = rootAdmin(w).InfoServiceAccount(w.ctx, target)
		w.g.Expect(err).NotTo(HaveOccurred(), "a forged Secret made the broker delete key %s", target)
		w.g.Expect(w.tenantKey("forge-attacker").AccessKeyID).NotTo(Equal(target))
	}
	w.g.Expect(w.works(victim, "forge-victim")).To(Succeed())
}

// A key whose own policy another admin tool widened is not kept: Ensure
// deletes it and issues a new one.
func TestABroadenedKeyIsReplaced(t *testing.T) {
	w := newWorld(t, "broad", "broad-a")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "broad-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	a := w.tenantKey("broad-a")
	body := map[string]any{"newPolicy": json.RawMessage(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}`)}
	w.g.Expect(rootAdmin(w).Raw(w.ctx, http.MethodPost, "/update-service-account", url.Values{"accessKey": {a.AccessKeyID}}, body, true, nil)).To(Succeed())
	_, err = w.broker.Ensure(w.ctx, w.strategy, "broad-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect(w.tenantKey("broad-a").AccessKeyID).NotTo(Equal(a.AccessKeyID), "Ensure kept a key whose own policy is not its scope")
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, a.AccessKeyID)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the widened key was not deleted: %v", err)
}

// A strategy being deleted issues no key: a BackupJob reconciled after the
// removal of its keys would leave a live key no sweep ever sees. Ensure
// refuses it, and a key issued while the deletion begins (the strategy
// still looked alive) is taken back.
func TestADeletingStrategyLeavesNoKeyBehind(t *testing.T) {
	w := newWorld(t, "orphan", "orphan-a")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "orphan-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	alive := strategypolicy.Strategy{Etcd: w.strategy.Etcd.DeepCopy(), Policy: w.strategy.Policy}
	w.strategy.Finalizers = []string{credbroker.Finalizer}
	w.g.Expect(env.Client.Update(w.ctx, w.strategy.Etcd)).To(Succeed())
	w.g.Expect(env.Client.Delete(w.ctx, w.strategy.Etcd)).To(Succeed())
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKeyFromObject(w.strategy.Etcd), w.strategy.Etcd)).To(Succeed())
	w.g.Expect(w.broker.Remove(w.ctx, w.strategy)).To(Succeed()) // the credbroker controller

	_, err = w.broker.Ensure(w.ctx, w.strategy, "orphan-a") // a BackupJob reconciled a moment later
	w.g.Expect(err).To(MatchError(credbroker.ErrStrategyDeleting))
	_, err = w.broker.Ensure(w.ctx, alive, "orphan-a") // one whose cache did not show the deletion yet
	w.g.Expect(err).To(MatchError(credbroker.ErrStrategyDeleting))
	w.g.Expect(w.identities()).To(BeEmpty(), "keys left that no sweep will ever see")
	err = env.Client.Get(w.ctx, client.ObjectKey{Namespace: "orphan-a", Name: credbroker.SecretName("orphan")}, &corev1.Secret{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Secret of a taken-back key is left: %v", err)
	w.strategy.Finalizers = nil
	w.g.Expect(env.Client.Update(w.ctx, w.strategy.Etcd)).To(Succeed())
}
