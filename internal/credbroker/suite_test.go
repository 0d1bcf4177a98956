package credbroker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var (
	env    *testenv.Env
	server *testenv.MinIO
)

const (
	bucket      = "tenants"
	adminSecret = "platform-s3"
)

// TestMain starts the API server and a real MinIO server, which enforces
// the tenant keys' policies.
func TestMain(m *testing.M) {
	var err error
	if server, err = testenv.StartMinIO(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, func(e *testenv.Env) { env = e })
	_ = server.Stop()
	os.Exit(code)
}

func s3As(key s3object.Credentials) *minio.Client {
	c, err := testenv.S3Client(server.Endpoint, key.AccessKeyID, key.SecretAccessKey)
	if err != nil {
		panic(err)
	}
	return c
}

func rootKey() s3object.Credentials {
	return s3object.Credentials{AccessKeyID: server.RootUser, SecretAccessKey: server.RootPassword}
}

func put(ctx context.Context, c *minio.Client, key string) error {
	_, err := c.PutObject(ctx, bucket, key, strings.NewReader("snapshot"), 8, minio.PutObjectOptions{})
	return err
}

// world is one brokered strategy with its StrategyPolicy, its admin Secret
// in the driver's namespace, tenant namespaces, and a broker on a fake
// clock.
type world struct {
	g   *WithT
	ctx context.Context
	// strategy is the strategy with its policy as the driver reads them
	// (update writes both and reads them again).
	strategy strategypolicy.Strategy
	broker   *credbroker.Broker
	clock    *clocktesting.FakePassiveClock
	tenants  []string
	// platform is the strategy's platform credential.
	platform s3object.Credentials
}

func newWorld(t *testing.T, name string, tenants ...string) *world {
	g := NewWithT(t)
	ctx := context.Background()
	root := s3As(rootKey())
	if ok, _ := root.BucketExists(ctx, bucket); !ok {
		g.Expect(root.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})).To(Succeed())
	}
	// The platform credential is a MinIO user with the policy the docs
	// give it, not root.
	platformID, platformSecret, err := server.AddPlatformUser("platform-"+name, bucket)
	g.Expect(err).NotTo(HaveOccurred())
	admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.DriverNamespace, Name: adminSecret + "-" + name},
		StringData: map[string]string{s3object.AccessKeyIDKey: platformID, s3object.SecretAccessKeyKey: platformSecret}}
	g.Expect(env.Client.Create(ctx, admin)).To(Succeed())
	s := &strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: strategyv1alpha1.EtcdSpec{
			Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: bucket, Endpoint: server.Endpoint, Key: "{{ .Application.metadata.namespace }}/etcd/",
				CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "ignored"},
			}}},
		},
	}
	sp := &driverv1alpha1.StrategyPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: driverv1alpha1.StrategyPolicySpec{
			AllowHTTPEndpoint: true,
			CredentialBroker: &driverv1alpha1.CredentialBroker{
				Provider:       driverv1alpha1.CredentialBrokerMinIO,
				AdminSecretRef: driverv1alpha1.SecretReference{Name: admin.Name},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	g.Expect(env.Client.Create(ctx, sp)).To(Succeed())
	for _, ns := range tenants {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	platform := s3object.Credentials{AccessKeyID: platformID, SecretAccessKey: platformSecret}
	return &world{g: g, ctx: ctx, strategy: strategypolicy.Strategy{Etcd: s, Policy: strategypolicy.Effective(name, sp)}, clock: clock, tenants: tenants, platform: platform, broker: &credbroker.Broker{
		Client: env.Client, Reader: env.Client, Namespace: testenv.DriverNamespace, Clock: clock, Grace: 2 * time.Hour,
		Providers: map[driverv1alpha1.CredentialBrokerProvider]credbroker.NewProvider{
			driverv1alpha1.CredentialBrokerMinIO: brokerminio.Connect(nil),
		},
	}}
}

// update changes the strategy and its StrategyPolicy in the API server, as
// the platform admin does, and reads both again as the driver does.
func (w *world) update(mutate func(*strategyv1alpha1.Etcd, *driverv1alpha1.StrategyPolicy)) {
	s, sp := &strategyv1alpha1.Etcd{}, &driverv1alpha1.StrategyPolicy{}
	key := client.ObjectKey{Name: w.strategy.Name}
	w.g.Expect(env.Client.Get(w.ctx, key, s)).To(Succeed())
	w.g.Expect(env.Client.Get(w.ctx, key, sp)).To(Succeed())
	mutate(s, sp)
	w.g.Expect(env.Client.Update(w.ctx, s)).To(Succeed())
	w.g.Expect(env.Client.Update(w.ctx, sp)).To(Succeed())
	w.read()
}

// read reads the strategy and its policy again.
func (w *world) read() {
	var err error
	w.strategy, err = strategypolicy.Get(w.ctx, env.Client, w.strategy.Name)
	w.g.Expect(err).NotTo(HaveOccurred())
}

// policy reads the StrategyPolicy.
func (w *world) policy() *driverv1alpha1.StrategyPolicy {
	sp := &driverv1alpha1.StrategyPolicy{}
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKey{Name: w.strategy.Name}, sp)).To(Succeed())
	return sp
}

// tenantKey reads the key the tenant's Secret holds, as the operator's Pod
// does when it starts.
func (w *world) tenantKey(ns string) s3object.Credentials {
	creds, err := s3object.ReadCredentials(w.ctx, env.Client, ns, credbroker.SecretName(w.strategy.Name))
	w.g.Expect(err).NotTo(HaveOccurred())
	return creds
}

func (w *world) identities() []credbroker.Identity {
	p, err := brokerminio.New(server.Endpoint, credbroker.Key{AccessKeyID: w.platform.AccessKeyID, SecretAccessKey: w.platform.SecretAccessKey}, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	holdings, err := p.List(w.ctx, credbroker.Group(w.strategy.Name))
	w.g.Expect(err).NotTo(HaveOccurred())
	var ids []credbroker.Identity
	for _, h := range holdings {
		ids = append(ids, h.Keys...)
	}
	return ids
}

// noPlatformKeyInTenants lists every Secret of the tenant namespaces and
// fails if any holds the platform's access key id or secret.
func (w *world) noPlatformKeyInTenants() {
	for _, ns := range w.tenants {
		var secrets corev1.SecretList
		w.g.Expect(env.Client.List(w.ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		for _, s := range secrets.Items {
			for k, v := range s.Data {
				for _, platform := range []s3object.Credentials{w.platform, rootKey()} {
					w.g.Expect(string(v)).NotTo(ContainSubstring(platform.SecretAccessKey), "Secret %s/%s key %s holds the platform secret", ns, s.Name, k)
					w.g.Expect(string(v)).NotTo(Equal(platform.AccessKeyID), "Secret %s/%s key %s holds the platform key id", ns, s.Name, k)
				}
			}
		}
	}
}
