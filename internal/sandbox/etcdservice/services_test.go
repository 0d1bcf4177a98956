package etcdservice_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdservice"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The driver's way in (liverevision.Reader: clientv3 over TLS with the
// chart's client Secret, dialling the Service name) reaches a real etcd
// member through the proxy; another namespace's certificate does not.
func TestDriverReadsTheRevisionThroughTheClientService(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	member := startMember(t)
	services := etcdservice.New()
	defer services.Close()
	eps := runServices(ctx, g, env, services)

	a, b := cluster(t, env.Client, "svc-a"), cluster(t, env.Client, "svc-b")
	eps.Store(a, []string{member.Spec.ClientURL})
	eps.Store(b, []string{member.Spec.ClientURL})

	reader := liverevision.Reader{Secrets: env.Client, Dial: services.Dial, Policy: loopback(g), Timeout: 5 * time.Second}
	var rev int64
	g.Eventually(func() (err error) { rev, err = reader.Revision(ctx, a.Namespace); return err }, 30*time.Second).Should(Succeed())
	direct, err := etcdproc.Client(member.Spec.ClientURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer direct.Close()
	_, err = direct.Put(ctx, "/k", "v")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reader.Revision(ctx, a.Namespace)).To(Equal(rev + 1))

	var secretA, secretB corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: etcdservice.ClientSecretName}, &secretA)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: etcdservice.ClientSecretName}, &secretB)
	}, 10*time.Second).Should(Succeed())
	g.Expect(secretA.Data).To(HaveKey("ca.crt"))
	g.Expect(revisionWith(ctx, services, &secretA, a)).To(Equal(rev + 1))
	_, err = revisionWith(ctx, services, &secretB, a)
	g.Expect(err).To(HaveOccurred(), "a client certificate of another namespace's CA is refused")

	_, err = services.Dial(ctx, "tcp", "nothing-client."+a.Namespace+".svc:2379")
	g.Expect(err).To(MatchError(ContainSubstring("no such host")))

	// Members replaced: the proxy follows them at the next connection.
	other := startMember(t)
	eps.Store(a, []string{other.Spec.ClientURL})
	fresh, err := reader.Revision(ctx, a.Namespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fresh).To(Equal(int64(1)), "a new member's revision")

	g.Expect(env.Client.Delete(ctx, &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name}})).To(Succeed())
	g.Eventually(func() error { _, err := services.Dial(ctx, "tcp", "etcd-client."+a.Namespace+".svc:2379"); return err }, 10*time.Second).
		Should(MatchError(ContainSubstring("no such host")))
}

func TestServiceCluster(t *testing.T) {
	g := NewWithT(t)
	for host, want := range map[string]string{
		"etcd-client.tenant-a.svc":               "tenant-a/etcd",
		"etcd-client.tenant-a.svc.cluster.local": "tenant-a/etcd",
		"my-etcd-client.ns.svc":                  "ns/my-etcd",
		"etcd.tenant-a.svc":                      "",
		"etcd-client.tenant-a":                   "",
		"example.com":                            "",
		"-client.ns.svc":                         "",
	} {
		got, ok := etcdservice.ServiceCluster(host)
		if want == "" {
			g.Expect(ok).To(BeFalse(), host)
			continue
		}
		g.Expect(ok).To(BeTrue(), host)
		g.Expect(got.String()).To(Equal(want), host)
	}
}

func startMember(t *testing.T) *etcdproc.Member {
	t.Helper()
	dir := t.TempDir()
	clientURL, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	peerURL, err := etcdproc.FreeURL()
	if err != nil {
		t.Fatal(err)
	}
	m, err := etcdproc.Start(etcdproc.Spec{
		Binary: filepath.Join(testenv.RepoRoot(), "bin", "etcd"), Name: "m", DataDir: filepath.Join(dir, "data"),
		ClientURL: clientURL, PeerURL: peerURL, InitialCluster: "m=" + peerURL, Token: "t", LogFile: filepath.Join(dir, "etcd.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(0) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

func cluster(t *testing.T, c client.Client, ns string) types.NamespacedName {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	replicas := int32(1)
	if err := c.Create(ctx, &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas},
	}); err != nil {
		t.Fatal(err)
	}
	return types.NamespacedName{Namespace: ns, Name: "etcd"}
}

// revisionWith reads the revision of cluster through its Service with the
// certificate of secret.
func revisionWith(ctx context.Context, services *etcdservice.Services, secret *corev1.Secret, cluster types.NamespacedName) (int64, error) {
	cfg, err := etcdservice.ClientTLS(secret, cluster)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{fmt.Sprintf("https://%s-client.%s.svc:2379", cluster.Name, cluster.Namespace)},
		TLS:       cfg, DialTimeout: 3 * time.Second, Logger: zap.NewNop(), Context: ctx,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return services.Dial(ctx, "tcp", a)
		})},
	})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/probe")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

func TestMain(m *testing.M) {
	testenv.SetupLogs()
	os.Exit(m.Run())
}

// runServices runs services' controller on a manager of env until ctx
// ends, with the member URLs the returned map holds per cluster.
func runServices(ctx context.Context, g Gomega, env *testenv.Env, services *etcdservice.Services) *sync.Map {
	eps := &sync.Map{} // cluster → []string
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: driverscheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(services.Setup(mgr, func(c types.NamespacedName) []string {
		v, _ := eps.Load(c)
		urls, _ := v.([]string)
		return urls
	})).To(Succeed())
	go func() { _ = mgr.Start(ctx) }()
	return eps
}

// loopback is the endpoint policy the sandbox gives the driver: loopback
// addresses allowed.
func loopback(g Gomega) endpointpolicy.Policy {
	p, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
	g.Expect(err).NotTo(HaveOccurred())
	return p
}
