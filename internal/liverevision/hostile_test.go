package liverevision

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Attack (issue 32, item 2): the tenant owns the client Service. The
// driver dials exactly the Service's fully qualified name with a trailing
// dot, so no resolver search domain turns etcd-client.<ns>.svc into
// another name (the driver's own namespace's, or one under a search
// domain a tenant controls).
func TestDialsOnlyTheFullyQualifiedServiceName(t *testing.T) {
	g := NewWithT(t)
	p := newPKI(t, ServiceHost(ns))
	addr := startTLSEtcd(t, p)
	var mu sync.Mutex
	var dialled []string
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, a)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	// Whatever the read's outcome, only the one name is dialled.
	_, _ = Reader{Secrets: secrets(clientSecret(p)), Dial: dial, Timeout: 3 * time.Second}.Revision(context.Background(), ns)
	mu.Lock()
	defer mu.Unlock()
	g.Expect(dialled).NotTo(BeEmpty())
	g.Expect(dialled).To(HaveEach("etcd-client.tenant-a.svc.cluster.local.:2379"))
}

// listener accepts connections and records what they send.
type listener struct {
	net.Listener
	mu       sync.Mutex
	accepted int
	received int
}

func listen(t *testing.T) *listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	out := &listener{Listener: l}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			out.mu.Lock()
			out.accepted++
			out.mu.Unlock()
			go func() {
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				out.mu.Lock()
				out.received += int(n)
				out.mu.Unlock()
			}()
		}
	}()
	return out
}

func (l *listener) counts() (accepted, received int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted, l.received
}

// Attack (issue 32, item 2): the tenant points its Service at an address
// the driver may not reach (here loopback, which the default policy
// refuses, standing for the node or a metadata service). Through a dialer
// of one's own (the sandbox's) the address reached is checked before a
// byte is sent; through the driver's own dialer the resolved address is
// checked before connecting at all.
func TestEndpointPolicyAppliesToTheAddressReached(t *testing.T) {
	g := NewWithT(t)
	p := newPKI(t, ServiceHost(ns))
	l := listen(t)
	toListener := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, l.Addr().String())
	}
	_, err := Reader{Secrets: secrets(clientSecret(p)), Dial: toListener, Timeout: 2 * time.Second}.Revision(context.Background(), ns)
	g.Expect(err).To(MatchError(ContainSubstring("endpoint policy")))
	g.Eventually(func() int { a, _ := l.counts(); return a }).Should(BeNumerically(">", 0))
	_, received := l.counts()
	g.Expect(received).To(BeZero(), "nothing is sent to an address the policy refuses")

	// The driver's own dialer: refused before connecting.
	other := listen(t)
	_, err = Reader{}.dial(context.Background(), "localhost:"+strings.Split(other.Addr().String(), ":")[1])
	g.Expect(err).To(MatchError(ContainSubstring("which S3 endpoints may not reach")))
	time.Sleep(100 * time.Millisecond)
	accepted, _ := other.counts()
	g.Expect(accepted).To(BeZero(), "no connection is even opened")

	// With loopback allowed (the sandbox), the same read goes through to
	// a real etcd.
	addr := startTLSEtcd(t, p)
	var dialled []string
	g.Eventually(func() error {
		_, err := Reader{Secrets: secrets(clientSecret(p)), Dial: serviceTo(addr, &dialled), Policy: loopback(t)}.Revision(context.Background(), ns)
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// What a tenant may read of a failure is a fixed sentence: never the
// addresses, ports or certificate names the error carries.
func TestTenantMessageHidesTheError(t *testing.T) {
	g := NewWithT(t)
	raw := errors.New(`connect to etcd at etcd-client.tenant-a.svc.cluster.local.:2379: dial tcp 10.96.0.10:2379: tls: failed to verify certificate: x509: certificate is valid for vault.internal.svc, not etcd-client.tenant-a.svc`)
	msg := TenantMessage(raw)
	for _, leak := range []string{"10.96.0.10", "vault.internal", "x509", "2379"} {
		g.Expect(msg).NotTo(ContainSubstring(leak))
	}
	g.Expect(TenantMessage(errors.Join(ErrNoCredentials, raw))).To(ContainSubstring(ClientSecretName))
	g.Expect(TenantMessage(errors.Join(ErrNoCredentials, raw))).NotTo(ContainSubstring("vault.internal"))
}
