package brokered

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// tenant is a namespace with an Etcd application, bound by a BackupClass
// to a brokered strategy of its own whose platform key is the sandbox's
// MinIO root, kept in the driver's namespace.
type tenant struct {
	t     testing.TB
	g     *WithT
	ctx   context.Context
	ns    string
	class string
}

func newTenant(t testing.TB) *tenant {
	t.Helper()
	g := NewWithT(t)
	suffix := rand.String(5)
	tn := &tenant{t: t, g: g, ctx: context.Background(), ns: "tenant-" + suffix, class: "brokered-" + suffix}
	fps, group := true, strategyv1alpha1.GroupVersion.Group
	for _, o := range []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: sb.DriverNamespace, Name: "platform-s3-" + suffix},
			StringData: map[string]string{
				objstore.AccessKeyIDKey:     sb.PlatformCredentials.AccessKeyID,
				objstore.SecretAccessKeyKey: sb.PlatformCredentials.SecretAccessKey,
			},
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.ns}},
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: driverv1alpha1.StrategyPolicySpec{
				CredentialBroker: &driverv1alpha1.CredentialBroker{
					Provider:       driverv1alpha1.CredentialBrokerMinIO,
					AdminSecretRef: driverv1alpha1.SecretReference{Name: "platform-s3-" + suffix},
				},
			},
		},
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: strategyv1alpha1.EtcdSpec{
				Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
					Bucket:               sandbox.DefaultBucket,
					Endpoint:             sb.S3URL,
					Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
					ForcePathStyle:       &fps,
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "ignored-when-brokered"},
				}}},
			},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: tn.class},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}},
	} {
		g.Expect(sb.Client.Create(tn.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
	return tn
}

// deploy creates the application's HelmRelease of charts/etcd and waits
// for every member.
func (tn *tenant) deploy(replicas int) {
	tn.t.Helper()
	values, err := json.Marshal(map[string]any{"replicas": replicas})
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(sb.Client.Create(tn.ctx, &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"},
		Spec: helmv2.HelmReleaseSpec{
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack-apps"},
			}},
			Values: &apiextensionsv1.JSON{Raw: values},
		},
	})).To(Succeed())
	tn.awaitHealthy(int32(replicas))
}

func (tn *tenant) awaitHealthy(replicas int32) {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		var c etcdv1alpha2.EtcdCluster
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &c)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)).To(BeTrue())
		g.Expect(c.Status.ReadyMembers).To(Equal(replicas))
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// backup runs a BackupJob to its end and returns it.
func (tn *tenant) backup(name string) *backupsv1alpha1.BackupJob {
	tn.t.Helper()
	j := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class,
		},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, j)).To(Succeed())
	tn.g.Eventually(func() bool {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
		return j.Status.Phase.IsTerminal()
	}).WithTimeout(3*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), func() string { return fmt.Sprintf("%+v", j.Status) })
	return j
}

// restore runs a RestoreJob of backup to its end and returns it.
func (tn *tenant) restore(name, backup string) *backupsv1alpha1.RestoreJob {
	tn.t.Helper()
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, rj)).To(Succeed())
	tn.g.Eventually(func() bool {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		return rj.Status.Phase.IsTerminal()
	}).WithTimeout(4*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), func() string { return fmt.Sprintf("%+v", rj.Status) })
	return rj
}

// etcd opens a client to the application's live members, closed when the
// test ends.
func (tn *tenant) etcd() *clientv3.Client {
	tn.t.Helper()
	cli, err := etcdproc.Client(sb.Fleet.Endpoints(client.ObjectKey{Namespace: tn.ns, Name: "etcd"})...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.t.Cleanup(func() { _ = cli.Close() })
	return cli
}
