package endpointpolicy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWithCAPEMAndFile(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test S3 CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})

	p, err := Policy{}.WithCAPEM(ca)
	if err != nil || p.RootCAs == nil {
		t.Fatalf("WithCAPEM = %v, roots %v", err, p.RootCAs)
	}
	if _, err := (Policy{}).WithCAPEM([]byte("not a certificate")); err == nil {
		t.Fatal("WithCAPEM accepted a bundle without a certificate")
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := (Policy{}).WithCAFile(file); err != nil || p.RootCAs == nil {
		t.Fatalf("WithCAFile = %v", err)
	}
}
