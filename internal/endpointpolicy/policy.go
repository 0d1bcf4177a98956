// Package endpointpolicy decides which S3 endpoints the driver may name in
// an EtcdSnapshot or dial itself. Endpoints come from strategy templates
// rendered with tenant-controlled application metadata, and from Backups a
// tenant can write, so an endpoint is untrusted: it must be https (unless
// the strategy opts into http), and it must not reach the node or the cloud
// from the driver's network position — loopback, link-local (including
// instance metadata), unspecified and multicast addresses are refused
// unless the platform allows specific ranges with a flag. The check runs on
// the URL before anything is created from it, and again on every resolved
// address the driver connects to, so DNS cannot route around it.
package endpointpolicy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// denied are the address ranges no endpoint may reach by default.
var denied = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network", unspecified
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, instance metadata 169.254.169.254
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, broadcast
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("::1/128"),            // loopback
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS IPv6 instance metadata
	netip.MustParsePrefix("ff00::/8"),           // multicast
}

// deniedHosts are names that mean the node itself or a metadata service
// wherever they resolve.
var deniedHosts = []string{"localhost", "metadata", "metadata.google.internal", "instance-data", "instance-data.ec2.internal"}

// Policy is the endpoint policy. The zero value denies every range above.
type Policy struct {
	// Allowed are ranges permitted although denied by default (the
	// sandbox allows 127.0.0.0/8, where its S3 server listens).
	Allowed []netip.Prefix
	// RootCAs verify https endpoints; nil means the system's roots.
	RootCAs *x509.CertPool
}

// WithCAFile adds the PEM certificates in file to the system's roots for
// https endpoints (an S3 service with a private CA).
func (p Policy) WithCAFile(file string) (Policy, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return p, fmt.Errorf("read S3 CA bundle: %w", err)
	}
	p, err = p.WithCAPEM(pem)
	if err != nil {
		return p, fmt.Errorf("S3 CA bundle %s: %w", file, err)
	}
	return p, nil
}

// WithCAPEM adds the PEM certificates in pem to the system's roots for
// https endpoints; the staging Job receives the bundle in its environment
// rather than as a file.
func (p Policy) WithCAPEM(pem []byte) (Policy, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return p, fmt.Errorf("the S3 CA bundle holds no PEM certificate")
	}
	p.RootCAs = pool
	return p, nil
}

// Parse builds a Policy from CIDR strings such as "127.0.0.0/8".
func Parse(cidrs []string) (Policy, error) {
	var p Policy
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			return Policy{}, fmt.Errorf("allowed endpoint range %q is not a CIDR: %w", c, err)
		}
		p.Allowed = append(p.Allowed, prefix.Masked())
	}
	return p, nil
}

// CheckAddr refuses an address in a denied range that no allowed range
// covers.
func (p Policy) CheckAddr(a netip.Addr) error {
	a = a.Unmap()
	for _, ok := range p.Allowed {
		if ok.Contains(a) {
			return nil
		}
	}
	for _, d := range denied {
		if d.Contains(a) {
			return fmt.Errorf("address %s is in %s, which S3 endpoints may not reach (loopback, link-local, metadata, unspecified or multicast); an admin can allow a range with --allowed-endpoint-cidrs", a, d)
		}
	}
	return nil
}

// CheckURL validates an endpoint before anything is created from it or sent
// to it: an http(s) URL naming only a host and port, https unless allowHTTP,
// and a host that is not a denied address or name. Host names are resolved
// only when dialled (see Dialer).
func (p Policy) CheckURL(endpoint string, allowHTTP bool) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint is not a URL: %w", err)
	}
	if u.User != nil {
		return fmt.Errorf("endpoint %q must not carry credentials; they belong in the credentials Secret", u.Redacted())
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q must start with https:// (or http:// where the strategy's StrategyPolicy allows it)", endpoint)
	case u.Scheme == "http" && !allowHTTP:
		return fmt.Errorf("%q uses plain http, which sends the S3 credentials' signatures and the snapshot unencrypted; use https, or set spec.allowHTTPEndpoint: true in the StrategyPolicy of the Etcd strategy's name", endpoint)
	case u.Hostname() == "":
		return fmt.Errorf("%q has no host", endpoint)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q must name only a scheme, host and port", endpoint)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(a)
	}
	for _, d := range deniedHosts {
		if host == d || strings.HasSuffix(host, "."+d) {
			return p.checkName(host)
		}
	}
	return nil
}

// checkName refuses a denied host name unless its loopback or metadata
// address is allowed (the sandbox names 127.0.0.1, not localhost, but an
// allowed 127.0.0.0/8 lets localhost through as well).
func (p Policy) checkName(host string) error {
	probe := netip.MustParseAddr("169.254.169.254")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		probe = netip.MustParseAddr("127.0.0.1")
	}
	if p.CheckAddr(probe) == nil {
		return nil
	}
	return fmt.Errorf("host %q is the node itself or a metadata service, which S3 endpoints may not reach", host)
}

// Dialer is a net.Dialer that connects only to addresses the policy allows:
// the check runs on the resolved address of every connection, redirects and
// retries included.
func (p Policy) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("endpoint policy: cannot parse dialled address %q: %w", address, err)
			}
			return p.CheckAddr(ap.Addr())
		},
	}
}

// Transport is an HTTP transport for S3 clients that dials through Dialer
// and ignores proxy settings from the environment (a proxy would hide the
// real destination from the check).
func (p Policy) Transport() *http.Transport {
	d := p.Dialer()
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:       &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
}
