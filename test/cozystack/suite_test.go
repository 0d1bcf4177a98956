// Package cozystack runs the driver on the schema a Cozystack cluster
// serves: Cozystack's own backups.cozystack.io and
// strategy.backups.cozystack.io CRDs, which lack the driver's optional
// fields (a RestoreJob's immutable spec), beside the driver's own group
// (the StrategyPolicy holds the platform admin's settings for a strategy),
// with the driver's own Plan scheduler off as on a Cozystack platform
// (Cozystack's Plan controller schedules; the tests play its part). The
// driver must work, and say so wherever a setting cannot be honoured. The
// S3 server speaks https (http needs the StrategyPolicy's opt-in), with a
// CA the driver is given by --s3-ca-file.
package cozystack

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
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env     *testenv.Env
	plat    *platform.Platform
	s3srv   *s3server.Server
	s3c     *minio.Client
	s3Creds = s3server.Credentials{AccessKeyID: "platform-key", SecretAccessKey: "platform-secret-key"}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cozystack-suite-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cert, pool, caFile, err := loopbackCert(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s3srv, err = s3server.StartTLS(filepath.Join(dir, "s3"), s3Creds, cert, platform.Bucket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s3c, err = minio.New(s3srv.URL[len("https://"):], &minio.Options{
		Creds: credentials.NewStaticV4(s3Creds.AccessKeyID, s3Creds.SecretAccessKey, ""), Secure: true,
		BucketLookup: minio.BucketLookupPath,
		Transport:    &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testenv.RunWith(m, testenv.Options{Cozystack: true}, func(e *testenv.Env) {
		env = e
		plat = &platform.Platform{Client: e.Client, S3URL: s3srv.URL, S3: s3c, Creds: s3Creds}
		plat.Start(e.Config, func(o *manager.Options) {
			o.S3CAFile = caFile
			o.DisabledControllers = []string{"plan"}
		})
	})
}

// loopbackCert is a self-signed certificate for 127.0.0.1 (its own CA),
// as a TLS certificate, a pool that trusts it, and a PEM file of it.
func loopbackCert(dir string) (tls.Certificate, *x509.CertPool, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s3.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, "", err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, "", err
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return tls.Certificate{}, nil, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}, pool, file, nil
}
