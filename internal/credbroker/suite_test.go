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

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
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

// world is one brokered strategy, its admin Secret in the driver's
// namespace, tenant namespaces, and a broker on a fake clock.
type world struct {
	g        *WithT
	ctx      context.Context
	strategy *strategyv1alpha1.Etcd
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
			AllowHTTPEndpoint: true,
			CredentialBroker: &strategyv1alpha1.EtcdCredentialBroker{
				Provider:       strategyv1alpha1.CredentialBrokerMinIO,
				AdminSecretRef: strategyv1alpha1.SecretReference{Name: admin.Name},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	for _, ns := range tenants {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	platform := s3object.Credentials{AccessKeyID: platformID, SecretAccessKey: platformSecret}
	return &world{g: g, ctx: ctx, strategy: s, clock: clock, tenants: tenants, platform: platform, broker: &credbroker.Broker{
		Client: env.Client, Reader: env.Client, Namespace: testenv.DriverNamespace, Clock: clock, Grace: 2 * time.Hour,
		Providers: map[strategyv1alpha1.CredentialBrokerProvider]credbroker.NewProvider{
			strategyv1alpha1.CredentialBrokerMinIO: brokerminio.Connect(nil),
		},
	}}
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
