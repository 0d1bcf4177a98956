// Package liverevision reads how far a tenant's live etcd cluster has come:
// its current revision, the highest resourceVersion any Kubernetes client of
// that etcd can have seen. A restore raises the restored cluster's revision
// above it, so that no watch cache or informer is left waiting on a
// revision the restored data never reached.
//
// The driver dials the cluster the way its clients do: the client Service
// etcd-client.<namespace>.svc:2379, over TLS, with the client certificate the
// etcd chart issues (Secret etcd-client-tls: tls.crt, tls.key and the CA in
// ca.crt, CN root). The server certificates name the Service, not pod
// addresses, so the TLS server name is the Service's DNS name whatever
// address the connection reaches.
package liverevision

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// ClientSecretName is the chart's client certificate Secret.
	ClientSecretName = "etcd-client-tls"
	// ServicePort is the client port of the etcd-client Service.
	ServicePort = 2379
	// DefaultTimeout bounds one read, dial included.
	DefaultTimeout = 10 * time.Second
)

// ServiceHost is the DNS name of the client Service of the etcd in ns.
func ServiceHost(ns string) string { return "etcd-client." + ns + ".svc" }

// ErrNoCredentials is returned when the client certificate Secret is
// missing or incomplete: the revision cannot be read, which is not worth
// retrying.
var ErrNoCredentials = errors.New("no usable etcd client certificate")

// DialFunc opens a connection to addr (host:port).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Reader reads live revisions.
type Reader struct {
	// Secrets reads the client certificate Secret (live: the driver does
	// not cache Secrets).
	Secrets client.Reader
	// Dial opens connections; nil dials the Service address as it is.
	Dial DialFunc
	// Timeout bounds one read; zero means DefaultTimeout.
	Timeout time.Duration
}

// Revision returns the current revision of the etcd cluster in ns, as a
// linearizable read reports it.
func (r Reader) Revision(ctx context.Context, ns string) (int64, error) {
	cfg, err := r.tlsConfig(ctx, ns)
	if err != nil {
		return 0, err
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := r.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	addr := net.JoinHostPort(ServiceHost(ns), strconv.Itoa(ServicePort))
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + addr},
		TLS:         cfg,
		DialTimeout: timeout,
		Context:     ctx,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dial(ctx, "tcp", a)
		})},
	})
	if err != nil {
		return 0, fmt.Errorf("connect to etcd at %s: %w", addr, err)
	}
	defer cli.Close()
	// A key nobody writes: the answer is empty and its header carries the
	// cluster's revision.
	resp, err := cli.Get(ctx, "\x00etcd-backup-driver/revision-probe")
	if err != nil {
		return 0, fmt.Errorf("read the revision of etcd at %s: %w", addr, err)
	}
	return resp.Header.Revision, nil
}

func (r Reader) tlsConfig(ctx context.Context, ns string) (*tls.Config, error) {
	var s corev1.Secret
	err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: ClientSecretName}, &s)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: Secret %s/%s does not exist", ErrNoCredentials, ns, ClientSecretName)
	}
	if err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", ns, ClientSecretName, err)
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%w: Secret %s/%s: %v", ErrNoCredentials, ns, ClientSecretName, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		return nil, fmt.Errorf("%w: Secret %s/%s has no CA certificate in ca.crt", ErrNoCredentials, ns, ClientSecretName)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   ServiceHost(ns),
		MinVersion:   tls.VersionTLS12,
	}, nil
}
