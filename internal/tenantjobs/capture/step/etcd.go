package step

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// Bounds of what the etcd can make the capture hold.
const (
	// MaxMessageBytes bounds one watch message. The etcd fragments a
	// response above its --max-request-bytes (1.5 MiB by default), so
	// only an etcd configured for events above this cannot be followed
	// (a gap, RevisionTooLarge).
	MaxMessageBytes = 8 << 20
	// windowBytes fixes gRPC's flow-control windows (stream and
	// connection); fixing them turns off their growth up to 16 MiB.
	windowBytes = 1 << 20
)

// connect opens a client to the tenant's etcd.
func connect(o capture.Options) (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:            o.EtcdEndpoints,
		DialTimeout:          10 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		MaxCallRecvMsgSize:   MaxMessageBytes,
		MaxCallSendMsgSize:   1 << 20,
		Logger:               zap.NewNop(),
		DialOptions:          []grpc.DialOption{grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes)},
	}
	if o.EtcdCA != "" {
		t, err := clientTLS(o.EtcdCert, o.EtcdKey, o.EtcdCA)
		if err != nil {
			return nil, err
		}
		cfg.TLS = t
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", o.EtcdEndpoints, err)
	}
	return cli, nil
}

// clientTLS trusts the CA in caFile and presents the certificate in
// certFile and keyFile, read again at every handshake: cert-manager
// renews the tenant's client certificate in place.
func clientTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the etcd CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return nil, fmt.Errorf("read the etcd client certificate: %w", err)
	}
	return &tls.Config{
		RootCAs:    pool,
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("read the etcd client certificate: %w", err)
			}
			return &c, nil
		},
	}, nil
}
