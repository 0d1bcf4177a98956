package liverevision

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

const ns = "tenant-a"

// serviceAddr is the only address the driver dials: the client Service's
// fully qualified name, with the trailing dot no search domain extends.
const serviceAddr = "etcd-client.tenant-a.svc.cluster.local.:2379"

// loopback is the sandbox's endpoint policy: the tests' etcd listens on
// 127.0.0.1, which the default policy refuses.
func loopback(t testing.TB) endpointpolicy.Policy {
	p, err := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pki is a CA with the certificates the etcd chart issues: a server
// certificate naming the client Service, and a client certificate CN=root.
type pki struct {
	caPEM, serverCert, serverKey, clientCert, clientKey []byte
}

func newPKI(t testing.TB, serverNames ...string) pki {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	p.serverCert, p.serverKey = issue(2, "etcd-server", x509.ExtKeyUsageServerAuth, serverNames, nil)
	p.clientCert, p.clientKey = issue(3, "root", x509.ExtKeyUsageClientAuth, nil, nil)
	return p
}

// startTLSEtcd runs a real etcd that serves clients only over TLS and only
// to certificates of p's CA, with flags added; it returns the client
// address.
func startTLSEtcd(t testing.TB, p pki, flags ...string) string {
	t.Helper()
	bin := filepath.Join(testenv.RepoRoot(), "bin", "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing; run `make envtest-bins`: %v", bin, err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	clientAddr, peerAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "--name=m0", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls=https://"+clientAddr, "--advertise-client-urls=https://"+clientAddr,
		"--listen-peer-urls=http://"+peerAddr, "--initial-advertise-peer-urls=http://"+peerAddr,
		"--initial-cluster=m0=http://"+peerAddr,
		"--cert-file="+write("server.crt", p.serverCert), "--key-file="+write("server.key", p.serverKey),
		"--trusted-ca-file="+write("ca.crt", p.caPEM), "--client-cert-auth")
	cmd.Args = append(cmd.Args, flags...)
	cmd.Stdout, cmd.Stderr = testenv.LogWriter(), testenv.LogWriter()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return clientAddr
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func clientSecret(p pki) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ClientSecretName},
		Data: map[string][]byte{"tls.crt": p.clientCert, "tls.key": p.clientKey, "ca.crt": p.caPEM}}
}

// serviceTo maps the client Service's address, and only it, to addr.
func serviceTo(addr string, dialled *[]string) DialFunc {
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		*dialled = append(*dialled, a)
		if a != serviceAddr {
			return nil, fmt.Errorf("unexpected address %s", a)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func secrets(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
}

func TestRevisionOverTLSWithTheChartsClientCertificate(t *testing.T) {
	g := NewWithT(t)
	p := newPKI(t, ServiceHost(ns), "etcd-client."+ns+".svc.cluster.local")
	addr := startTLSEtcd(t, p)

	// Writes through a client of our own raise the revision to a known value.
	var dialled []string
	r := Reader{Secrets: secrets(clientSecret(p)), Dial: serviceTo(addr, &dialled), Policy: loopback(t)}
	var before int64
	g.Eventually(func() error {
		var err error
		before, err = r.Revision(context.Background(), ns)
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	cfg, err := r.tlsConfig(context.Background(), ns)
	g.Expect(err).NotTo(HaveOccurred())
	// The server certificate names the Service, not 127.0.0.1: this client
	// dials the Service name too, through the same mapping.
	var own []string
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + serviceAddr}, TLS: cfg,
		Logger: zap.NewNop(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return serviceTo(addr, &own)(ctx, "tcp", a)
		})}})
	g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	for i := range 25 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("/registry/configmaps/x/%d", i), "v")
		cancel()
		g.Expect(err).NotTo(HaveOccurred())
	}
	got, err := r.Revision(context.Background(), ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(before + 25))
	g.Expect(dialled).To(HaveEach(serviceAddr))
}

func TestRevisionRefusals(t *testing.T) {
	p := newPKI(t, ServiceHost(ns))
	addr := startTLSEtcd(t, p)
	other := newPKI(t, ServiceHost(ns))
	wrongName := newPKI(t, "etcd.example.com")
	ctx := context.Background()
	var dialled []string

	t.Run("no Secret", func(t *testing.T) {
		_, err := Reader{Secrets: secrets(), Dial: serviceTo(addr, &dialled), Policy: loopback(t)}.Revision(ctx, ns)
		NewWithT(t).Expect(errors.Is(err, ErrNoCredentials)).To(BeTrue(), "%v", err)
	})
	t.Run("Secret without a CA", func(t *testing.T) {
		s := clientSecret(p)
		delete(s.Data, "ca.crt")
		_, err := Reader{Secrets: secrets(s), Dial: serviceTo(addr, &dialled), Policy: loopback(t)}.Revision(ctx, ns)
		NewWithT(t).Expect(errors.Is(err, ErrNoCredentials)).To(BeTrue(), "%v", err)
	})
	t.Run("a client certificate of another CA", func(t *testing.T) {
		s := clientSecret(other)
		s.Data["ca.crt"] = p.caPEM
		_, err := Reader{Secrets: secrets(s), Dial: serviceTo(addr, &dialled), Policy: loopback(t), Timeout: 3 * time.Second}.Revision(ctx, ns)
		NewWithT(t).Expect(err).To(HaveOccurred())
	})
	t.Run("a server that is not the Service", func(t *testing.T) {
		// A server whose certificate names something else is not trusted,
		// although its CA is.
		addr2 := startTLSEtcd(t, wrongName)
		_, err := Reader{Secrets: secrets(clientSecret(wrongName)), Dial: serviceTo(addr2, &dialled), Policy: loopback(t), Timeout: 3 * time.Second}.Revision(ctx, ns)
		NewWithT(t).Expect(err).To(HaveOccurred())
	})
}
