package etcdservice_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdservice"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// With PublishHosts, a process that resolves names through the hosts file
// (the driver in its container, whose /etc/hosts it is) and dials the
// Service's port as it is reaches the cluster: the file names each
// Service's address, its proxy listens there at 2379, and a cluster that
// goes loses its line.
func TestPublishedHostsReachEachServiceAtItsPort(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	member := startMember(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	services := etcdservice.New()
	defer services.Close()
	g.Expect(services.PublishHosts(hosts)).To(Succeed())
	eps := runServices(ctx, g, env, services)
	a, b := cluster(t, env.Client, "hosts-a"), cluster(t, env.Client, "hosts-b")
	eps.Store(a, []string{member.Spec.ClientURL})
	eps.Store(b, []string{member.Spec.ClientURL})

	// The resolver of the driver's container: names from the file, the
	// port as dialled.
	viaHostsFile := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ip, err := lookup(hosts, host)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
	}
	reader := liverevision.Reader{Secrets: env.Client, Dial: viaHostsFile, Policy: loopback(g), Timeout: 5 * time.Second}
	g.Eventually(func() error { _, err := reader.Revision(ctx, a.Namespace); return err }, 30*time.Second).Should(Succeed())
	g.Eventually(func() error { _, err := reader.Revision(ctx, b.Namespace); return err }, 30*time.Second).Should(Succeed())
	ipA, err := lookup(hosts, "etcd-client."+a.Namespace+".svc.cluster.local")
	g.Expect(err).NotTo(HaveOccurred())
	ipB, err := lookup(hosts, "etcd-client."+b.Namespace+".svc")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ipA).NotTo(Equal(ipB), "each Service has an address of its own")
	g.Expect(net.ParseIP(ipA).IsLoopback()).To(BeTrue())
	_, err = lookup(hosts, "etcd-client")
	g.Expect(err).To(HaveOccurred(), "no bare Service name: it would name every namespace's")

	g.Expect(env.Client.Delete(ctx, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})).To(Succeed())
	g.Eventually(func() error { _, err := lookup(hosts, "etcd-client."+a.Namespace+".svc"); return err }, 10*time.Second).
		Should(MatchError(ContainSubstring("not in")))
	_, err = reader.Revision(ctx, b.Namespace)
	g.Expect(err).NotTo(HaveOccurred(), "the other Service stays")
}

// lookup resolves name in the hosts file at path.
func lookup(path, name string) (string, error) {
	// A fully qualified name (the driver dials one) matches its line as
	// Go's resolver matches /etc/hosts: without the trailing dot.
	name = strings.TrimSuffix(name, ".")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, n := range fields[1:] {
			if n == name {
				return fields[0], nil
			}
		}
	}
	return "", &net.DNSError{Err: "not in " + path, Name: name, IsNotFound: true}
}
