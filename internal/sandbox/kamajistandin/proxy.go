package kamajistandin

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"
)

// etcdProxy stands for the tenant etcd's client Service: a loopback port
// whose every new connection goes to a member the Fleet lists now. A
// restore deletes the members and starts new ones on new ports; the
// apiserver keeps dialling the same address, as it would a Service.
type etcdProxy struct {
	// endpoints returns the members' client URLs (http://127.0.0.1:port).
	endpoints func() []string

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  chan struct{}
}

func startProxy(endpoints func() []string) (*etcdProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("etcd proxy: %w", err)
	}
	p := &etcdProxy{endpoints: endpoints, ln: ln, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go p.serve()
	return p, nil
}

// URL is what the apiserver's --etcd-servers names.
func (p *etcdProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *etcdProxy) serve() {
	defer close(p.done)
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward connects c to the first member that accepts; with none, c is
// closed at once, as a Service with no ready endpoint refuses.
func (p *etcdProxy) forward(c net.Conn) {
	var up net.Conn
	for _, ep := range p.endpoints() {
		u, err := url.Parse(ep)
		if err != nil {
			continue
		}
		if up, err = net.DialTimeout("tcp", u.Host, 2*time.Second); err == nil {
			break
		}
	}
	if up == nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Either side ending ends both, so a dead member is noticed.
		_ = dst.Close()
		_ = src.Close()
	}
	wg.Add(2)
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
	p.untrack(c, up)
}

func (p *etcdProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *etcdProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// Close stops accepting and cuts every forwarded connection.
func (p *etcdProxy) Close() {
	_ = p.ln.Close()
	<-p.done
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}
