package etcdservice

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
)

// hostsHeader starts every hosts file PublishHosts writes.
const hostsHeader = "# The sandbox's tenant etcd client Services (internal/sandbox/etcdservice).\n127.0.0.1\tlocalhost\n::1\tlocalhost\n"

// PublishHosts makes the client Services reachable by name from outside
// the sandbox's process, as cluster DNS makes them: each cluster's proxy
// then listens on a loopback address of its own at the Service's port
// (2379), and path is kept a hosts file naming those addresses by the
// Service's DNS names. The sandbox's container mode bind-mounts it at the
// driver's /etc/hosts (Go's resolver reads /etc/hosts first and again when
// it changes), so the driver dials etcd-client.<ns>.svc:2379 as in a
// cluster. Call it before Setup. The file is rewritten in place, never
// replaced, so that a bind mount of it sees every change.
func (s *Services) PublishHosts(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hostsFile = path
	return s.writeHostsLocked()
}

// listen opens a new proxy's listener: any loopback port, or with
// PublishHosts, port 2379 of a loopback address no one else holds.
func (s *Services) listen() (net.Listener, error) {
	if s.hostsFile == "" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var err error
	for range 64 {
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), ClientPort)); err == nil {
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("listen on a loopback address at port %s: %w", ClientPort, err)
}

// writeHostsLocked rewrites the hosts file from the running proxies; s.mu
// is held.
func (s *Services) writeHostsLocked() error {
	if s.hostsFile == "" {
		return nil
	}
	keys := make([]types.NamespacedName, 0, len(s.proxies))
	for k := range s.proxies {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var b strings.Builder
	b.WriteString(hostsHeader)
	for _, k := range keys {
		host, _, _ := net.SplitHostPort(s.proxies[k].addr())
		// The Service's qualified names only: a bare etcd-client would
		// name every namespace's.
		names := dnsNames(k)[2:]
		fmt.Fprintf(&b, "%s\t%s\n", host, strings.Join(names, " "))
	}
	f, err := os.OpenFile(s.hostsFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
