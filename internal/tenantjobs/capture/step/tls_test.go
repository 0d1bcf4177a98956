package step

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// Over TLS, as in a tenant's namespace: the capture presents the client
// certificate from the Secret's files to an etcd that requires one, and
// captures.
func TestCaptureOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	files := writePKI(t, dir)
	other, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	secure := "https://" + strings.TrimPrefix(other, "http://")
	// The test's own client writes over the plain listener startEtcd
	// gives; the capture reaches the one that requires a certificate.
	_, cli := startEtcd(ctx, t, "--listen-client-urls={client},"+secure, "--cert-file="+files["server.crt"], "--key-file="+files["server.key"],
		"--trusted-ca-file="+files["ca.crt"], "--client-cert-auth")
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	o := options(secure, s3URL, b, dir)
	o.EtcdCert, o.EtcdKey, o.EtcdCA = files["client.crt"], files["client.key"], files["ca.crt"]
	r := startCapture(t, o)
	workload(ctx, t, cli, "tls", 1, 20)
	awaitDurable(ctx, t, storeOf(t, o), revision(ctx, t, cli), r)
	if code, rep := r.stop(t); code != capture.ExitStopped {
		t.Fatalf("exit %d, %+v", code, rep)
	}
}

// writePKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate CN=root (as the etcd chart issues) under dir.
func writePKI(t *testing.T, dir string) map[string]string {
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
	files := map[string]string{}
	write := func(name string, block *pem.Block) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = path
	}
	write("ca.crt", &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for i, c := range []struct {
		name  string
		usage x509.ExtKeyUsage
	}{{"server", x509.ExtKeyUsageServerAuth}, {"client", x509.ExtKeyUsageClientAuth}} {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "root"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{c.usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		write(c.name+".crt", &pem.Block{Type: "CERTIFICATE", Bytes: der})
		write(c.name+".key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	return files
}
