package credbroker_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
)

// One tenant's key can neither see nor delete another tenant's key; a key
// the server no longer knows (deleted behind the driver's back) is noticed
// by Ensure and by the sweep, and re-issued.
func TestSiblingKeysCannotHarmEachOther(t *testing.T) {
	w := newWorld(t, "siblings", "siblings-a", "siblings-b", "siblings-c")
	for _, ns := range w.tenants {
		_, err := w.broker.Ensure(w.ctx, w.strategy, ns)
		w.g.Expect(err).NotTo(HaveOccurred())
	}
	a, b := w.tenantKey("siblings-a"), w.tenantKey("siblings-b")
	tenantA, err := brokerminio.NewAdmin(server.Endpoint, a.AccessKeyID, a.SecretAccessKey, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	seen, err := tenantA.ListServiceAccounts(w.ctx)
	if err == nil {
		for _, s := range seen {
			w.g.Expect(s.AccessKey).NotTo(Equal(b.AccessKeyID), "tenant a's key lists tenant b's key")
		}
	}
	err = tenantA.DeleteServiceAccount(w.ctx, b.AccessKeyID)
	w.g.Expect(err).To(HaveOccurred(), "tenant a's key deleted tenant b's key")
	w.g.Expect(w.works(b, "siblings-b")).To(Succeed(), "tenant b's key died")

	// The platform deletes b's and c's keys behind the driver's back: the
	// next backup (Ensure) and the sweep each re-issue one.
	root, err := brokerminio.NewAdmin(server.Endpoint, server.RootUser, server.RootPassword, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	c := w.tenantKey("siblings-c")
	w.g.Expect(root.DeleteServiceAccount(w.ctx, b.AccessKeyID)).To(Succeed())
	w.g.Expect(root.DeleteServiceAccount(w.ctx, c.AccessKeyID)).To(Succeed())

	_, err = w.broker.Ensure(w.ctx, w.strategy, "siblings-b")
	w.g.Expect(err).NotTo(HaveOccurred())
	b2 := w.tenantKey("siblings-b")
	w.g.Expect(b2.AccessKeyID).NotTo(Equal(b.AccessKeyID), "Ensure kept a key the server no longer knows")
	w.g.Expect(w.works(b2, "siblings-b")).To(Succeed())

	w.clock.SetTime(w.clock.Now().Add(time.Minute))
	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	c2 := w.tenantKey("siblings-c")
	w.g.Expect(c2.AccessKeyID).NotTo(Equal(c.AccessKeyID), "the sweep kept a key the server no longer knows")
	w.g.Expect(w.works(c2, "siblings-c")).To(Succeed())
	for _, ns := range w.tenants {
		w.g.Expect(w.escapes(w.tenantKey(ns), ns)).To(BeEmpty())
	}
}
