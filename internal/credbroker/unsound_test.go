package credbroker_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
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

// Two brokered strategies on one bucket whose prefix roots start one
// another could give a tenant of one a prefix holding the other's tenants'
// objects (root "ovl/" and namespace "a" against root "" and namespace
// "ovl"): the younger issues nothing, and says why.
func TestOverlappingPrefixRootsAreRefused(t *testing.T) {
	const own = "overlap" // a bucket of their own: every other test's strategy has root "" on "tenants"
	root := s3As(rootKey())
	w := newWorld(t, "overlap-old", "ovl-a", "ovl")
	w.g.Expect(root.MakeBucket(w.ctx, own, minio.MakeBucketOptions{})).To(Succeed())
	w.strategy.Spec.CredentialBroker.PrefixRoot = "ovl/"
	w.strategy.Spec.Template.Destination.S3.Bucket = own
	w.strategy.Spec.Template.Destination.S3.Key = "ovl/{{ .Application.metadata.namespace }}/etcd/"
	w.g.Expect(env.Client.Update(w.ctx, w.strategy)).To(Succeed())
	_, err := w.broker.Ensure(w.ctx, w.strategy, "ovl-a")
	w.g.Expect(err).NotTo(HaveOccurred())

	time.Sleep(time.Second) // a later creationTimestamp
	young := newWorld(t, "overlap-young")
	young.strategy.Spec.Template.Destination.S3.Bucket = own
	w.g.Expect(env.Client.Update(w.ctx, young.strategy)).To(Succeed())
	_, err = young.broker.Ensure(young.ctx, young.strategy, "ovl")
	w.g.Expect(err).To(MatchError(credbroker.ErrOverlappingScopes))
	w.g.Expect(err.Error()).To(ContainSubstring(`"overlap-old"`))
	_, err = s3object.ReadCredentials(w.ctx, env.Client, "ovl", credbroker.SecretName("overlap-young"))
	w.g.Expect(err).To(HaveOccurred(), "the younger strategy wrote a key")

	// The older one keeps working.
	_, err = w.broker.Ensure(w.ctx, w.strategy, "ovl")
	w.g.Expect(err).NotTo(HaveOccurred())
	c := s3As(w.tenantKey("ovl"))
	_, err = c.PutObject(w.ctx, own, "ovl/ovl/etcd/s.db", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = c.PutObject(w.ctx, own, "ovl/ovl-a/etcd/s.db", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	w.g.Expect(minio.ToErrorResponse(err).Code).To(Equal("AccessDenied"))
}
