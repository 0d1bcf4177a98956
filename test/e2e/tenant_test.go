package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
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
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// credsSecret is the Secret name the strategy points at.
const credsSecret = "etcd-backup-s3"

// tenant is one namespace with an Etcd application deployed through a
// HelmRelease of charts/etcd, the admin's strategy and BackupClass, and the
// S3 credentials Secret.
type tenant struct {
	t     testing.TB
	g     *WithT
	ctx   context.Context
	ns    string
	class string
}

func newTenant(t testing.TB, withSecret bool) *tenant {
	t.Helper()
	g := NewWithT(t)
	suffix := rand.String(5)
	tn := &tenant{t: t, g: g, ctx: context.Background(), ns: "tenant-" + suffix, class: "etcd-" + suffix}
	fps := true
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.ns}},
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec:       driverv1alpha1.StrategyPolicySpec{}, // https only: the sandbox's S3 speaks https with its CA
		},
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
				S3: &strategyv1alpha1.EtcdS3Template{
					Bucket:               sandbox.DefaultBucket,
					Endpoint:             sb.S3.URL,
					Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
					ForcePathStyle:       &fps,
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: credsSecret},
				},
			}}},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: tn.class},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}},
	}
	if withSecret {
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: credsSecret},
			StringData: map[string]string{
				objstore.AccessKeyIDKey:     sb.S3Credentials.AccessKeyID,
				objstore.SecretAccessKeyKey: sb.S3Credentials.SecretAccessKey,
			},
		})
	}
	for _, o := range objs {
		g.Expect(sb.Client.Create(tn.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
	return tn
}

func ptr[T any](v T) *T { return &v }

// deploy creates the application's HelmRelease and waits for a healthy
// EtcdCluster with all replicas.
func (tn *tenant) deploy(replicas int) {
	tn.t.Helper()
	values, err := json.Marshal(map[string]any{"replicas": replicas})
	tn.g.Expect(err).NotTo(HaveOccurred())
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"},
		Spec: helmv2.HelmReleaseSpec{
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "etcd",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack-apps"},
			}},
			Values: &apiextensionsv1.JSON{Raw: values},
		},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, hr)).To(Succeed())
	tn.awaitHealthy(int32(replicas), 2*time.Minute)
}

// awaitHealthy waits for Available=True/QuorumHealthy with every replica ready.
func (tn *tenant) awaitHealthy(replicas int32, timeout time.Duration) *etcdv1alpha2.EtcdCluster {
	tn.t.Helper()
	var c etcdv1alpha2.EtcdCluster
	tn.g.Eventually(func(g Gomega) {
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(etcdv1alpha2.ReasonQuorumHealthy), cond.Message)
		g.Expect(c.Status.ReadyMembers).To(Equal(replicas))
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return &c
}

func (tn *tenant) backupJob(name string) *backupsv1alpha1.BackupJob {
	j := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class,
		},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, j)).To(Succeed())
	return j
}

// awaitJob waits until the BackupJob is Succeeded or Failed.
func (tn *tenant) awaitJob(j *backupsv1alpha1.BackupJob, timeout time.Duration) *backupsv1alpha1.BackupJob {
	tn.t.Helper()
	tn.g.Eventually(func() backupsv1alpha1.BackupJobPhase {
		tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
		return j.Status.Phase
	}).WithTimeout(timeout).WithPolling(200*time.Millisecond).Should(
		BeElementOf(backupsv1alpha1.BackupJobPhaseSucceeded, backupsv1alpha1.BackupJobPhaseFailed),
		func() string { return fmt.Sprintf("%+v", j.Status) })
	return j
}
