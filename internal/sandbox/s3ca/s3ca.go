// Package s3ca is the certificate authority of the sandbox's and the test
// platform's S3 servers: S3 there speaks https, as Cozystack's COSI bucket
// endpoint does, with a CA of its own (a platform's private CA), and
// whatever reads S3 (the driver through --s3-ca-file, its Jobs through
// S3_CA_PEM, the etcd-operator stand-in, the tests' own clients) is handed
// that CA and nothing else: a server certificate it did not issue is
// refused. Plain http is an admin's explicit choice (a StrategyPolicy's
// allowHTTPEndpoint), never the default.
package s3ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// validity is long enough for any sandbox session.
const validity = 10 * 365 * 24 * time.Hour

// CA is a fresh certificate authority and the one serving certificate it
// issued, for loopback (127.0.0.1, ::1 and localhost), where the S3 servers
// listen.
type CA struct {
	// PEM is the CA's certificate: the bundle the driver's --s3-ca-file
	// and its Jobs' S3_CA_PEM hold.
	PEM []byte
	// Pool trusts the CA alone.
	Pool *x509.CertPool
	// Serving is the S3 server's certificate and key.
	Serving tls.Certificate

	servingPEM, servingKeyPEM []byte
}

// New makes a CA and its serving certificate.
func New() (*CA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "etcd-backup-driver sandbox S3 CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("s3ca: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("s3ca: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &CA{
		PEM:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Pool:          x509.NewCertPool(),
		servingPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		servingKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	c.Pool.AddCert(caCert)
	if c.Serving, err = tls.X509KeyPair(c.servingPEM, c.servingKeyPEM); err != nil {
		return nil, err
	}
	return c, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// WriteCA writes the CA's certificate (PEM) to path: what --s3-ca-file
// names.
func (c *CA) WriteCA(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, c.PEM, 0o644)
}

// WriteMinIOCerts writes the serving certificate and key where MinIO's
// --certs-dir dir expects them (public.crt, private.key), and the CA into
// its CAs folder (so that MinIO trusts its own certificate's issuer).
func (c *CA) WriteMinIOCerts(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "CAs"), 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"public.crt": c.servingPEM, "private.key": c.servingKeyPEM, filepath.Join("CAs", "ca.crt"): c.PEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// TLSConfig is a client configuration that trusts the CA alone.
func (c *CA) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}

// HTTPClient is an HTTP client that trusts the CA alone.
func (c *CA) HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = c.TLSConfig()
	return &http.Client{Transport: t}
}
