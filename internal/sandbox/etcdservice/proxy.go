package etcdservice

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// handshakeTimeout bounds a client's TLS handshake.
const handshakeTimeout = 10 * time.Second

// proxy is one cluster's client Service: it terminates TLS on a loopback
// port and forwards the plain stream to a live member's client URL,
// looking the members up at every connection so it follows members that
// are replaced (a restore re-creates all of them).
type proxy struct {
	ln        net.Listener
	cfg       atomic.Pointer[tls.Config]
	endpoints func() []string
	next      atomic.Uint64

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startProxy serves on ln.
func startProxy(ln net.Listener, cfg *tls.Config, endpoints func() []string) *proxy {
	p := &proxy{ln: ln, endpoints: endpoints, conns: map[net.Conn]struct{}{}}
	p.cfg.Store(cfg)
	p.wg.Add(1)
	go p.serve()
	return p
}

// addr is the proxy's local address.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// ip is the address the proxy listens on.
func (p *proxy) ip() net.IP { return p.ln.Addr().(*net.TCPAddr).IP }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.forward(c)
		}()
	}
}

// forward completes the TLS handshake (verifying the client certificate)
// and pipes the connection to a member. With no member serving, the
// connection is closed, as a Service without ready endpoints refuses it.
func (p *proxy) forward(raw net.Conn) {
	defer raw.Close()
	c := tls.Server(raw, p.cfg.Load())
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	err := c.HandshakeContext(ctx)
	cancel()
	if err != nil {
		return
	}
	backend := p.dialMember()
	if backend == nil {
		return
	}
	if !p.track(backend) {
		backend.Close()
		return
	}
	defer p.untrack(backend)
	defer backend.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, c); closeWrite(backend); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, backend); _ = c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// dialMember connects to a live member, starting with a different one at
// each connection.
func (p *proxy) dialMember() net.Conn {
	eps := p.endpoints()
	if len(eps) == 0 {
		return nil
	}
	start := int(p.next.Add(1))
	for i := range eps {
		ep := eps[(start+i)%len(eps)]
		host := strings.TrimPrefix(strings.TrimPrefix(ep, "http://"), "https://")
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err == nil {
			return c
		}
	}
	return nil
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// close stops listening and cuts every connection, as deleting the
// Service would leave its clients with nothing to reach.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
