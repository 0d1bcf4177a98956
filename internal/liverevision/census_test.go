package liverevision

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

// Census walks every key of a real TLS etcd through the client Service,
// across pages, and counts them per resource and namespace; with the
// default endpoint policy (no loopback) it dials nothing and what a
// tenant may read of the failure is the fixed sentence.
func TestCensusCountsEveryKeyAcrossPages(t *testing.T) {
	g := NewWithT(t)
	p := newPKI(t, ServiceHost(ns), "etcd-client."+ns+".svc.cluster.local")
	addr := startTLSEtcd(t, p)
	var dialled []string
	r := Reader{Secrets: secrets(clientSecret(p)), Dial: serviceTo(addr, &dialled), Policy: loopback(t)}
	g.Eventually(func() error { _, err := r.Revision(context.Background(), ns); return err }).WithTimeout(30 * time.Second).Should(Succeed())

	cfg, err := r.tlsConfig(context.Background(), ns)
	g.Expect(err).NotTo(HaveOccurred())
	var own []string
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + serviceAddr}, TLS: cfg, Logger: zap.NewNop(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return serviceTo(addr, &own)(ctx, "tcp", a)
		})}})
	g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(k string) {
		_, err := cli.Put(ctx, k, "{}")
		g.Expect(err).NotTo(HaveOccurred())
	}
	put("/registry/namespaces/a")
	put("/registry/namespaces/b")
	for batch := range 11 { // more than one page, in transactions of 100 puts
		var ops []clientv3.Op
		for i := range 100 {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/registry/configmaps/a/cm%04d", batch*100+i), "{}"))
		}
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		g.Expect(err).NotTo(HaveOccurred())
	}
	put("/registry/pods/b/p")
	put("/registry/pods/b/gone")
	_, err = cli.Delete(ctx, "/registry/pods/b/gone")
	g.Expect(err).NotTo(HaveOccurred())
	rev, err := r.Revision(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())

	c, err := r.Census(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Revision).To(Equal(rev))
	g.Expect(c.Now.Keys).To(Equal(int64(1103)))
	g.Expect(c.Now.Revision).To(Equal(rev))
	ks := c.Now.Keyspaces
	g.Expect(ks).To(HaveLen(1))
	g.Expect(ks[0].Prefix).To(Equal("/registry"))
	g.Expect(ks[0].NamespaceNames).To(ConsistOf("a", "b"))
	counts := map[string]int64{}
	for _, rc := range ks[0].Resources {
		counts[rc.Name] = rc.Count
	}
	g.Expect(counts).To(HaveKeyWithValue("configmaps", int64(1100)))
	g.Expect(counts).To(HaveKeyWithValue("pods", int64(1)))
	g.Expect(dialled).To(HaveEach(serviceAddr))

	// The default policy refuses the loopback address the Service reaches.
	_, err = Reader{Secrets: secrets(clientSecret(p)), Dial: serviceTo(addr, &dialled), Policy: endpointpolicy.Policy{}, Timeout: 3 * time.Second}.Census(ctx, ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(TenantMessage(err)).NotTo(ContainSubstring("127.0.0.1"))
	g.Expect(strings.Contains(err.Error(), "endpoint policy")).To(BeTrue(), "%v", err)
}
