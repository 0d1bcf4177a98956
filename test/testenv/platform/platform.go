// Package platform is the test kit's Cozystack-like platform: one S3
// bucket with a prefix per tenant, the strategy and class that write there,
// and tenants with a running etcd application, so that suites can drive the
// real driver as tenants and admins do and check what it did.
package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The platform's objects, as Cozystack names them.
const (
	// ClassName is the platform's BackupClass.
	ClassName = "cozy-default"
	// CredsSecret is the S3 credentials Secret copied into every tenant.
	CredsSecret = "cozy-backups-creds"
	// Bucket is the platform's one bucket; tenants get a prefix each.
	Bucket = "cozy-backups"
)

// Platform is one API server with the driver's admin objects: an Etcd
// strategy (StrategyName) that sends every tenant's snapshots to Bucket
// under <namespace>/<app>/ at S3URL, its StrategyPolicy (deletion policy
// Delete, plain http allowed only where S3URL is http, and the broker when
// set), and the BackupClass binding it.
type Platform struct {
	// Client is an admin client.
	Client client.Client
	// S3URL is the S3 endpoint; S3 a client of it (the operator stores
	// snapshots through it); Creds its keys.
	S3URL string
	S3    *minio.Client
	Creds s3server.Credentials
	// CA issued S3's certificate and CAFile holds it (the driver's
	// --s3-ca-file, the operator's roots); nil and empty over plain http.
	CA     *s3ca.CA
	CAFile string
	// Broker, when set, makes the strategy broker per-tenant keys with
	// Creds as the platform credential (kept in the driver's namespace as
	// AdminSecret); tenants then get no copy of Creds. See NewBrokered.
	Broker *driverv1alpha1.CredentialBroker
}

// AdminSecret holds the platform credential of a brokered Platform in the
// driver's namespace.
const AdminSecret = "platform-s3-admin"

// StrategyName names the platform's Etcd strategy and its StrategyPolicy.
const StrategyName = "cozy-default-etcd"

// Create makes the strategy and the class.
func (p *Platform) Create(ctx context.Context) error {
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	if p.Broker != nil {
		admin := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.DriverNamespace, Name: AdminSecret},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": p.Creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": p.Creds.SecretAccessKey}}
		if err := p.Client.Create(ctx, admin); err != nil {
			return err
		}
	}
	for _, o := range []client.Object{
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: StrategyName},
			Spec: strategyv1alpha1.EtcdSpec{
				Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
					Bucket: Bucket, Endpoint: p.S3URL, ForcePathStyle: &fps,
					Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: CredsSecret},
				}}},
			},
		},
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: StrategyName},
			Spec: driverv1alpha1.StrategyPolicySpec{DeletionPolicy: driverv1alpha1.DeletionPolicyDelete, AllowHTTPEndpoint: strings.HasPrefix(p.S3URL, "http://"),
				CredentialBroker: p.Broker.DeepCopy()},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: ClassName},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: StrategyName},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
	} {
		if err := p.Client.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// Tenant is one tenant namespace with its etcd application, as the chart,
// the platform and the operator would have made it: the credentials
// Secret, the application, a healthy three-member EtcdCluster with its
// PVCs and HelmRelease, and the test kit's operator playing the
// etcd-operator and Flux there.
type Tenant struct {
	T   *testing.T
	G   *WithT
	Ctx context.Context
	NS  string
	Op  *testenv.Operator
	p   *Platform
}

// NewTenant creates a tenant in a fresh namespace named name-<random>.
func (p *Platform) NewTenant(t *testing.T, name string) *Tenant {
	t.Helper()
	g := NewWithT(t)
	tn := &Tenant{T: t, G: g, Ctx: context.Background(), NS: name + "-" + rand.String(5), p: p}
	tn.Create(p.TenantObjects(tn.NS)...)
	g.Expect(testenv.MarkHealthy(tn.Ctx, tn.p.Client, client.ObjectKey{Namespace: tn.NS, Name: "etcd"})).To(Succeed())
	tn.Op = testenv.StartOperator(t, tn.p.Client, tn.NS, tn.p.S3)
	tn.Op.Set(func(op *testenv.Operator) { op.KeyFromSecret, op.S3CA = p.Broker != nil, p.CA })
	return tn
}

// TenantObjects are what a tenant namespace ns holds before the driver
// acts, in creation order: the namespace, the credentials Secret, the
// application, a three-member EtcdCluster (its status still to be marked
// healthy), its HelmRelease and member PVCs.
func (p *Platform) TenantObjects(ns string) []client.Object {
	replicas := int32(3)
	size := resource.MustParse("1Gi")
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	if p.Broker == nil {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: CredsSecret},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": p.Creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": p.Creds.SecretAccessKey}})
	}
	objs = append(objs,
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}},
		&etcdv1alpha2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd", Labels: map[string]string{"helm.toolkit.fluxcd.io/name": "etcd"}},
			Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas, Storage: &etcdv1alpha2.StorageSpec{Size: &size}},
		},
		&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}, Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}}}},
	)
	for i := range 3 {
		objs = append(objs, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("data-etcd-%d", i), Labels: map[string]string{"app.kubernetes.io/instance": "etcd"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
		})
	}
	return objs
}

// Create creates objects as an admin.
func (tn *Tenant) Create(objs ...client.Object) {
	tn.T.Helper()
	for _, o := range objs {
		tn.G.Expect(createPastPolicyDelay(tn.Ctx, tn.p.Client, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

// createPastPolicyDelay creates o, retrying for up to a minute while an
// admission policy refuses its kind with 503 ("There can be a delay
// between when CustomResourceDefinitions are created and when they are
// available"), as Flux and the operators retry: on a seconds-old API
// server the policy's view of the CRDs can still lapse after it first
// admitted every kind (the CI met it once).
func createPastPolicyDelay(ctx context.Context, c client.Client, o client.Object) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Create(ctx, o)
		if !apierrors.IsServiceUnavailable(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Get reads obj back.
func (tn *Tenant) Get(obj client.Object) client.Object {
	tn.T.Helper()
	tn.G.Expect(tn.p.Client.Get(tn.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// Gone reports whether obj no longer exists.
func (tn *Tenant) Gone(obj client.Object) bool {
	return apierrors.IsNotFound(tn.p.Client.Get(tn.Ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
}

// Backup takes a real backup of the tenant's cluster through a BackupJob
// (of plan, when not empty) and returns its Backup.
func (tn *Tenant) Backup(name string, plan string) *backupsv1alpha1.Backup {
	tn.T.Helper()
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: ClassName},
	}
	if plan != "" {
		job.Spec.PlanRef = &backupsv1alpha1.LocalObjectReference{Name: plan}
	}
	tn.Create(job)
	tn.G.Eventually(func(g Gomega) {
		g.Expect(tn.p.Client.Get(tn.Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), "status: %+v", job.Status)
	}).WithTimeout(60 * time.Second).Should(Succeed())
	b := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: job.Status.BackupRef.Name}}
	tn.Get(b)
	tn.G.Expect(tn.p.ObjectExists(KeyOf(tn.G, b))).To(BeTrue())
	return b
}

// Restore asks for an in-place restore and waits for its end.
func (tn *Tenant) Restore(name, backup, options string) *backupsv1alpha1.RestoreJob {
	tn.T.Helper()
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: name},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}}}
	if options != "" {
		rj.Spec.Options = &runtime.RawExtension{Raw: []byte(options)}
	}
	tn.Create(rj)
	return tn.AwaitRestore(rj)
}

// AwaitRestore waits until rj is finished and let go of its finalizer.
func (tn *Tenant) AwaitRestore(rj *backupsv1alpha1.RestoreJob) *backupsv1alpha1.RestoreJob {
	tn.T.Helper()
	tn.G.Eventually(func(g Gomega) {
		g.Expect(tn.p.Client.Get(tn.Ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		g.Expect(rj.Status.Phase.IsTerminal()).To(BeTrue(), "status: %+v", rj.Status)
		g.Expect(rj.Finalizers).To(BeEmpty())
	}).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

// Cluster is the tenant's live EtcdCluster.
func (tn *Tenant) Cluster() *etcdv1alpha2.EtcdCluster {
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "etcd"}}
	tn.Get(c)
	return c
}

// Untouched asserts the tenant's cluster is still the one it was, with its
// volumes, and its HelmRelease is not suspended.
func (tn *Tenant) Untouched(before *etcdv1alpha2.EtcdCluster) {
	tn.T.Helper()
	tn.G.Expect(tn.Cluster().UID).To(Equal(before.UID), "the cluster was replaced")
	var pvcs corev1.PersistentVolumeClaimList
	tn.G.Expect(tn.p.Client.List(tn.Ctx, &pvcs, client.InNamespace(tn.NS))).To(Succeed())
	tn.G.Expect(pvcs.Items).To(HaveLen(3), "volumes were removed")
	tn.G.Expect(tn.HelmRelease().Spec.Suspend).To(BeFalse(), "the HelmRelease was left suspended")
}

// Reason is a job's Ready reason.
func Reason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, backupsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// Events lists the Event reasons about obj.
func (tn *Tenant) Events(obj client.Object) []string {
	var list eventsv1.EventList
	tn.G.Expect(tn.p.Client.List(tn.Ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() {
			out = append(out, e.Reason)
		}
	}
	return out
}

// KeyOf is the exact object key a Backup names.
func KeyOf(g Gomega, b *backupsv1alpha1.Backup) string {
	src, err := artifact.Resolve(b)
	g.Expect(err).NotTo(HaveOccurred())
	return src.Key
}

// ObjectExists reports whether the platform's bucket holds key.
func (p *Platform) ObjectExists(key string) bool {
	_, err := p.S3.StatObject(context.Background(), Bucket, key, minio.StatObjectOptions{})
	return err == nil
}

// Forge copies a Backup into another namespace under a new name: everything
// it says, signature included, as a tenant could.
func Forge(from *backupsv1alpha1.Backup, ns, name string) *backupsv1alpha1.Backup {
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: from.Labels},
		Spec:       *from.Spec.DeepCopy(),
		Status:     *from.Status.DeepCopy(),
	}
	b.Status.Conditions = nil
	return b
}

// HelmRelease is the tenant's HelmRelease.
func (tn *Tenant) HelmRelease() *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "etcd"}}
	tn.Get(hr)
	return hr
}

// NewBrokered returns a Platform on a real MinIO server whose strategy
// brokers per-tenant keys, with a MinIO user holding the policy the docs
// give the platform credential (testenv.PlatformPolicyFile) as that
// credential, not root (not yet created: see Create and Start). S3 is a
// root client, for the tests' own reads.
func NewBrokered(c client.Client, m *testenv.MinIO) (*Platform, error) {
	s3c, err := m.Client(m.RootUser, m.RootPassword)
	if err != nil {
		return nil, err
	}
	if err := s3c.MakeBucket(context.Background(), Bucket, minio.MakeBucketOptions{}); err != nil {
		return nil, err
	}
	id, secret, err := m.AddPlatformUser("etcd-backup-platform", Bucket)
	if err != nil {
		return nil, err
	}
	creds := s3server.Credentials{AccessKeyID: id, SecretAccessKey: secret}
	return &Platform{Client: c, S3URL: m.Endpoint, S3: s3c, Creds: creds, CA: m.CA, CAFile: m.CAFile(), Broker: &driverv1alpha1.CredentialBroker{
		Provider: driverv1alpha1.CredentialBrokerMinIO, AdminSecretRef: driverv1alpha1.SecretReference{Name: AdminSecret},
	}}, nil
}

// DefaultCreds are the platform's S3 keys, copied into every tenant.
var DefaultCreds = s3server.Credentials{AccessKeyID: "platform-key", SecretAccessKey: "platform-secret-key"}

// New starts an S3 server in dir with the platform's bucket, speaking https
// with a CA of its own (as a platform's S3 behind a private CA does; the
// CA's PEM in dir/s3-ca.crt), and returns a Platform on it for c (not yet
// created: see Create and Start).
func New(c client.Client, dir string) (*Platform, error) {
	ca, err := s3ca.New()
	if err != nil {
		return nil, err
	}
	p := &Platform{Client: c, Creds: DefaultCreds, CA: ca, CAFile: filepath.Join(dir, "s3-ca.crt")}
	if err := ca.WriteCA(p.CAFile); err != nil {
		return nil, err
	}
	srv, err := s3server.StartTLS(filepath.Join(dir, "s3"), DefaultCreds, ca.Serving, Bucket)
	if err != nil {
		return nil, err
	}
	p.S3URL = srv.URL
	if p.S3, err = testenv.S3ClientWithCA(srv.URL, DefaultCreds.AccessKeyID, DefaultCreds.SecretAccessKey, ca); err != nil {
		return nil, err
	}
	return p, nil
}
