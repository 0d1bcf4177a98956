package etcdservice

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Secret names and keys as the etcd chart's cert-manager Certificates
// write them (charts/etcd/templates/certificates.yaml).
const (
	// CASecretName is the namespace's CA (tls.crt, tls.key, ca.crt).
	CASecretName = "etcd-ca-tls"
	// ClientSecretName is the root client identity (CN root).
	ClientSecretName = "etcd-client-tls"
	// CAKey is the CA certificate key of a cert-manager Secret.
	CAKey = "ca.crt"
	// ClientCommonName is the client certificate's CN: etcd's root user.
	ClientCommonName = "root"
)

// certValidity is long enough for any sandbox session.
const certValidity = 10 * 365 * 24 * time.Hour

// authority is a CA that can sign certificates.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// newAuthority creates a self-signed CA, as the chart's etcd-ca
// Certificate (issued by a selfSigned Issuer) does per namespace.
func newAuthority(commonName string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// authorityFromSecret loads the CA of an etcd-ca-tls Secret.
func authorityFromSecret(s *corev1.Secret) (*authority, error) {
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s: the sandbox signs with ECDSA CA keys only", s.Namespace, s.Name)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("Secret %s/%s holds no CA certificate", s.Namespace, s.Name)
	}
	return &authority{cert: cert, key: key, certPEM: s.Data[corev1.TLSCertKey], keyPEM: s.Data[corev1.TLSPrivateKeyKey]}, nil
}

// issue signs a leaf certificate; it returns the certificate and key PEM.
func (a *authority) issue(commonName string, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// serverConfig is the TLS configuration of a cluster's client Service:
// a server certificate for the Service's names (and the proxy's address,
// which Pods whose Service names the kubelet stand-in resolves dial:
// Services.Resolve) signed by the CA, client
// certificates required and verified against the CA alone, and h2 offered
// (gRPC insists on ALPN).
func (a *authority) serverConfig(dnsNames []string, ip net.IP) (*tls.Config, error) {
	certPEM, keyPEM, err := a.issue("etcd", dnsNames, []net.IP{ip}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(a.cert)
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(errors.Join(errors.New("etcdservice: no randomness"), err))
	}
	return n
}
