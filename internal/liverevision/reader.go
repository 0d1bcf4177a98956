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
//
// Everything on that path is the tenant's: the Service (an ExternalName,
// or EndpointSlices of its choosing), the CA the server must chain to, the
// certificate. So the name dialled is the Service's fully qualified one
// with a trailing dot (etcd-client.<namespace>.svc.<cluster domain>.), which
// no resolver search domain can turn into another name; every address it
// resolves to passes the driver's endpoint policy before a byte is sent
// (no loopback, link-local, metadata, unspecified or multicast address);
// and what a read's failure says is for the operator's log only: a tenant
// sees one fixed sentence (TenantMessage), never which address answered,
// which port was closed or what certificate an internal service showed.
//
// Reads (async.go) runs the reads off the restore's workers, so an etcd
// that does not answer delays only its own restore.
package liverevision

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"net/netip"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

const (
	// ClientSecretName is the chart's client certificate Secret.
	ClientSecretName = "etcd-client-tls"
	// ServicePort is the client port of the etcd-client Service.
	ServicePort = 2379
	// DefaultTimeout bounds one read, dial included.
	DefaultTimeout = 10 * time.Second
	// DefaultClusterDomain is Kubernetes' default cluster DNS domain.
	DefaultClusterDomain = "cluster.local"
)

// ServiceHost is the DNS name of the client Service of the etcd in ns, as
// its server certificate names it (the TLS server name).
func ServiceHost(ns string) string { return "etcd-client." + ns + ".svc" }

// ServiceAddress is what the driver dials: the client Service's fully
// qualified name under domain, with a trailing dot (no search domain is
// tried), and its port.
func ServiceAddress(ns, domain string) string {
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return net.JoinHostPort(ServiceHost(ns)+"."+strings.Trim(domain, ".")+".", strconv.Itoa(ServicePort))
}

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
	// Dial opens connections; nil resolves and dials the Service address
	// through Policy's dialer, which checks every resolved address before
	// connecting. A Dial of one's own (the sandbox's) has the address it
	// reached checked before anything is sent.
	Dial DialFunc
	// Policy is the endpoint policy every address dialled must pass; the
	// zero value refuses loopback, link-local, metadata, unspecified and
	// multicast addresses.
	Policy endpointpolicy.Policy
	// ClusterDomain is the cluster's DNS domain; empty means
	// DefaultClusterDomain.
	ClusterDomain string
	// Timeout bounds one read; zero means DefaultTimeout.
	Timeout time.Duration
}

// Revision returns the current revision of the etcd cluster in ns, as a
// linearizable read reports it.
func (r Reader) Revision(ctx context.Context, ns string) (int64, error) {
	var rev int64
	err := r.with(ctx, ns, r.Timeout, func(ctx context.Context, cli *clientv3.Client, addr string) error {
		// A key nobody writes: the answer is empty and its header carries
		// the cluster's revision.
		resp, err := cli.Get(ctx, "\x00etcd-backup-driver/revision-probe")
		if err != nil {
			return fmt.Errorf("read the revision of etcd at %s: %w", addr, err)
		}
		rev = resp.Header.Revision
		return nil
	})
	return rev, err
}

// with connects to the etcd in ns and runs read, all within timeout (zero:
// DefaultTimeout). A failure says what the last dial met.
func (r Reader) with(ctx context.Context, ns string, timeout time.Duration, read func(ctx context.Context, cli *clientv3.Client, addr string) error) error {
	cfg, err := r.tlsConfig(ctx, ns)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := ServiceAddress(ns, r.ClusterDomain)
	// gRPC retries a failed dial until the deadline and then says only
	// that: the last dial's error is what the operator's log needs.
	var mu sync.Mutex
	var lastDial error
	failed := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if lastDial == nil {
			return err
		}
		return fmt.Errorf("%w (last dial: %v)", err, lastDial)
	}
	// The endpoint names the Service as its certificate does: gRPC takes
	// the TLS server name from it. The connection itself always goes to
	// addr, whatever address gRPC asks for.
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + net.JoinHostPort(ServiceHost(ns), strconv.Itoa(ServicePort))},
		TLS:         cfg,
		DialTimeout: min(timeout, DefaultTimeout),
		// The tenant's server answers: no reply may be longer than a
		// census's page (etcd's client would take 2 GiB).
		MaxCallRecvMsgSize: MaxReplyBytes,
		Context:            ctx,
		Logger:             zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			conn, err := r.dial(ctx, addr)
			if err != nil {
				mu.Lock()
				lastDial = err
				mu.Unlock()
			}
			return conn, err
		})},
	})
	if err != nil {
		return failed(fmt.Errorf("connect to etcd at %s: %w", addr, err))
	}
	defer cli.Close()
	if err := read(ctx, cli, addr); err != nil {
		return failed(err)
	}
	return nil
}

// dial connects to addr at an address the policy allows: resolved and
// checked before connecting (the policy's dialer), or, through a Dial of
// one's own, checked once connected and closed before a byte is sent.
func (r Reader) dial(ctx context.Context, addr string) (net.Conn, error) {
	if r.Dial == nil {
		return r.Policy.Dialer().DialContext(ctx, "tcp", addr)
	}
	conn, err := r.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err == nil {
		err = r.Policy.CheckAddr(ap.Addr())
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("endpoint policy: %s reached %s: %w", addr, conn.RemoteAddr(), err)
	}
	return conn, nil
}

// TenantMessage is what a tenant may read about a failed read: one fixed
// sentence per kind of failure, never the error itself (which names the
// addresses, ports and certificates met on the way; the operator's log
// has it).
func TenantMessage(err error) string {
	var large *TooLargeError
	if errors.As(err, &large) {
		return large.Error()
	}
	if errors.Is(err, ErrNoCredentials) {
		return "Secret " + ClientSecretName + " is missing or holds no usable client certificate, key and CA (ca.crt)"
	}
	return "the etcd-client Service did not answer the driver over TLS with the client certificate of Secret " + ClientSecretName + " (the driver's log says why)"
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
