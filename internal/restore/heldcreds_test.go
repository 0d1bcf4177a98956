package restore

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Credentials read before a claim serve its check once, for the same
// Secret, and only while fresh; stale entries of restores that never
// checked are dropped.
func TestHeldCredentials(t *testing.T) {
	g := NewWithT(t)
	var h heldCreds
	c := s3object.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	now := time.Unix(1000, 0)

	h.hold("a", "creds", c, now)
	_, ok := h.take("a", "other", now)
	g.Expect(ok).To(BeFalse(), "another Secret")
	_, ok = h.take("a", "creds", now)
	g.Expect(ok).To(BeFalse(), "an entry is used once, even after a miss")

	h.hold("a", "creds", c, now)
	got, ok := h.take("a", "creds", now.Add(credsHeldFor))
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(c))

	h.hold("a", "creds", c, now)
	_, ok = h.take("a", "creds", now.Add(credsHeldFor+time.Second))
	g.Expect(ok).To(BeFalse(), "too old")

	h.hold("stale", "creds", c, now)
	h.hold("b", "creds", c, now.Add(2*credsHeldFor))
	g.Expect(h.m).NotTo(HaveKey(BeEquivalentTo("stale")))
	h.forget("b")
	g.Expect(h.m).To(BeEmpty())
}
