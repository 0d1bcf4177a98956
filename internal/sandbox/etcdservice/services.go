// Package etcdservice stands in, in the sandbox, for what makes a tenant's
// etcd reachable the way its clients reach it on a real cluster: the
// client Service <cluster>-client.<namespace>.svc:2379 serving TLS, and
// the chart's certificates, which cert-manager would issue (the sandbox
// runs no cert-manager, so the helm stand-in's render of them is skipped).
//
// For each EtcdCluster it ensures the Secrets etcd-ca-tls (a self-signed
// CA of the namespace, as the chart's selfSigned Issuer makes one per
// namespace) and etcd-client-tls (CN root, signed by that CA: tls.crt,
// tls.key, ca.crt) when they do not exist, and runs a TLS-terminating
// proxy on a loopback port whose server certificate names the Service
// (the chart's dnsNames), which requires a client certificate from the
// namespace's CA and forwards the plain stream to one of the cluster's
// live members (the stand-in's members serve plain HTTP on loopback). A
// client certificate of another namespace is refused, as it would be.
//
// Services.Dial maps <cluster>-client.<namespace>.svc[.cluster.local]:2379
// to the proxy and dials anything else as it is: it is the driver's
// manager.Options.EtcdDialer in the sandbox. For a driver in a container
// (the sandbox's container mode), PublishHosts puts each proxy on a
// loopback address of its own at port 2379 and names it in a hosts file.
package etcdservice

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// ClientPort is the client Service's port.
const ClientPort = "2379"

// Services runs the client Services of every EtcdCluster. The zero value
// is not usable: use New.
type Services struct {
	client    client.Client
	reader    client.Reader
	endpoints func(cluster types.NamespacedName) []string

	mu      sync.Mutex
	proxies map[types.NamespacedName]*clusterProxy
	closed  bool
	// hostsFile, when set, names every proxy's address (PublishHosts).
	hostsFile string
}

// clusterProxy is a running proxy and the CA its configuration came from.
type clusterProxy struct {
	*proxy
	caPEM string
}

// New returns Services with none running; Setup starts following
// EtcdClusters.
func New() *Services {
	return &Services{proxies: map[types.NamespacedName]*clusterProxy{}}
}

// Setup registers the controller that keeps a proxy (and the chart's
// Secrets) per EtcdCluster with mgr. endpoints returns the client URLs of
// a cluster's live members (the stand-in operator's Fleet.Endpoints).
func (s *Services) Setup(mgr ctrl.Manager, endpoints func(cluster types.NamespacedName) []string) error {
	s.client, s.reader, s.endpoints = mgr.GetClient(), mgr.GetAPIReader(), endpoints
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-client-service").
		For(&etcdv1alpha2.EtcdCluster{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(s.clustersUsingSecret)).
		Complete(s)
}

// clustersUsingSecret wakes the namespace's clusters when its CA or
// client Secret changes or goes.
func (s *Services) clustersUsingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetName() != CASecretName && o.GetName() != ClientSecretName {
		return nil
	}
	var list etcdv1alpha2.EtcdClusterList
	if err := s.client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}

// Reconcile keeps one cluster's Service: the Secrets, then the proxy with
// the namespace CA's current configuration. A cluster that is gone loses
// its proxy (its Service would be garbage-collected with it).
func (s *Services) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c etcdv1alpha2.EtcdCluster
	if err := s.client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, s.remove(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	ca, err := s.ensureSecrets(ctx, c.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, s.ensureProxy(req.NamespacedName, ca)
}

// ensureSecrets creates the namespace's CA and client Secrets when
// missing (never replacing existing ones) and returns the CA.
func (s *Services) ensureSecrets(ctx context.Context, ns string) (*authority, error) {
	var caSecret corev1.Secret
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: CASecretName}, &caSecret)
	if apierrors.IsNotFound(err) {
		ca, err := newAuthority("etcd-ca")
		if err != nil {
			return nil, err
		}
		caSecret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: CASecretName},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: ca.certPEM, corev1.TLSPrivateKeyKey: ca.keyPEM, CAKey: ca.certPEM},
		}
		if err := s.client.Create(ctx, &caSecret); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create Secret %s/%s: %w", ns, CASecretName, err)
		}
		err = s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: CASecretName}, &caSecret)
	}
	if err != nil {
		return nil, err
	}
	ca, err := authorityFromSecret(&caSecret)
	if err != nil {
		return nil, err
	}
	var clientSecret corev1.Secret
	err = s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ClientSecretName}, &clientSecret)
	if !apierrors.IsNotFound(err) {
		return ca, err
	}
	certPEM, keyPEM, err := ca.issue(ClientCommonName, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	clientSecret = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ClientSecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, CAKey: ca.certPEM},
	}
	if err := s.client.Create(ctx, &clientSecret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Secret %s/%s: %w", ns, ClientSecretName, err)
	}
	return ca, nil
}

// ensureProxy starts the cluster's proxy, or gives it the configuration
// of a CA that changed.
func (s *Services) ensureProxy(cluster types.NamespacedName, ca *authority) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	p := s.proxies[cluster]
	if p != nil && p.caPEM == string(ca.certPEM) {
		return nil
	}
	if p != nil {
		cfg, err := ca.serverConfig(dnsNames(cluster), p.ip())
		if err != nil {
			return err
		}
		p.cfg.Store(cfg)
		p.caPEM = string(ca.certPEM)
		return nil
	}
	ln, err := s.listen()
	if err != nil {
		return fmt.Errorf("client Service proxy of %s: %w", cluster, err)
	}
	cfg, err := ca.serverConfig(dnsNames(cluster), ln.Addr().(*net.TCPAddr).IP)
	if err != nil {
		ln.Close()
		return err
	}
	started := startProxy(ln, cfg, func() []string { return s.endpoints(cluster) })
	s.proxies[cluster] = &clusterProxy{proxy: started, caPEM: string(ca.certPEM)}
	return s.writeHostsLocked()
}

func (s *Services) remove(cluster types.NamespacedName) error {
	s.mu.Lock()
	p := s.proxies[cluster]
	delete(s.proxies, cluster)
	err := s.writeHostsLocked()
	s.mu.Unlock()
	if p != nil {
		p.close()
	}
	return err
}

// Close stops every proxy.
func (s *Services) Close() {
	s.mu.Lock()
	all := s.proxies
	s.proxies, s.closed = map[types.NamespacedName]*clusterProxy{}, true
	s.mu.Unlock()
	for _, p := range all {
		p.close()
	}
}

// Dial opens a connection to addr: a cluster's client Service name on
// port 2379 reaches its proxy (a name with no cluster behind it does not
// resolve); any other address is dialled as it is.
func (s *Services) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, ok := ServiceCluster(host); !ok {
		return d.DialContext(ctx, network, addr)
	}
	to, ok := s.Resolve(host, port)
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}
	return d.DialContext(ctx, network, to)
}

// Resolve is the address a Pod reaches host:port at, as cluster DNS and
// the Service would route it: a cluster's client Service name on port
// 2379 resolves to its proxy's address (whose certificate names that
// address too); ok is false for anything else. The sandbox's kubelet
// stand-in resolves the Service names in a Pod's arguments with it when
// the Pod runs as a local process (no resolver of its own to point).
func (s *Services) Resolve(host, port string) (addr string, ok bool) {
	cluster, ok := ServiceCluster(host)
	if !ok || port != ClientPort {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proxies[cluster]
	if p == nil {
		return "", false
	}
	return p.addr(), true
}

// ServiceCluster returns the EtcdCluster whose client Service host names
// (<cluster>-client.<namespace>.svc, optionally .cluster.local).
func ServiceCluster(host string) (types.NamespacedName, bool) {
	host = strings.TrimSuffix(strings.TrimSuffix(host, "."), ".cluster.local")
	rest, ok := strings.CutSuffix(host, ".svc")
	if !ok {
		return types.NamespacedName{}, false
	}
	svc, ns, ok := strings.Cut(rest, ".")
	if !ok || ns == "" || strings.Contains(ns, ".") {
		return types.NamespacedName{}, false
	}
	name, ok := strings.CutSuffix(svc, "-client")
	if !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// dnsNames are the client Service's names on the server certificate, as
// the chart's etcd.dnsNames lists them for the etcd-client Service.
func dnsNames(cluster types.NamespacedName) []string {
	svc, ns := cluster.Name+"-client", cluster.Namespace
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// ClientTLS is the TLS configuration a client of the cluster builds from
// an etcd-client-tls Secret: its certificate, the CA in ca.crt, and the
// Service's name as the server name.
func ClientTLS(s *corev1.Secret, cluster types.NamespacedName) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data[CAKey]) {
		return nil, fmt.Errorf("Secret %s/%s has no CA in %s", s.Namespace, s.Name, CAKey)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool,
		ServerName: cluster.Name + "-client." + cluster.Namespace + ".svc", MinVersion: tls.VersionTLS12}, nil
}
