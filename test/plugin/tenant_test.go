package plugin

import (
	"context"
	"encoding/json"
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
)

// tenant is a namespace with a one-member Etcd application deployed by a
// HelmRelease of charts/etcd, a strategy and BackupClass writing to the
// sandbox's S3, and the credentials Secret.
type tenant struct {
	g     *WithT
	ctx   context.Context
	ns    string
	class string
}

func newTenant(t *testing.T) *tenant {
	t.Helper()
	g := NewWithT(t)
	suffix := rand.String(5)
	tn := &tenant{g: g, ctx: context.Background(), ns: "tenant-" + suffix, class: "etcd-" + suffix}
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	values, err := json.Marshal(map[string]any{"replicas": 1})
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.ns}},
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec:       driverv1alpha1.StrategyPolicySpec{}, // https only: the sandbox's S3 speaks https with its CA
		},
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
				S3: &strategyv1alpha1.EtcdS3Template{
					Bucket: sandbox.DefaultBucket, Endpoint: sb.S3.URL, ForcePathStyle: &fps,
					Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "etcd-backup-s3"},
				},
			}}},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: tn.class},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: tn.class},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd-backup-s3"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": sb.S3Credentials.AccessKeyID, "AWS_SECRET_ACCESS_KEY": sb.S3Credentials.SecretAccessKey},
		},
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}},
		&helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"},
			Spec: helmv2.HelmReleaseSpec{
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack-apps"},
				}},
				Values: &apiextensionsv1.JSON{Raw: values},
			},
		},
	} {
		g.Expect(sb.Client.Create(tn.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
	tn.awaitHealthy(2 * time.Minute)
	return tn
}

// awaitHealthy waits for the EtcdCluster to be Available with its member ready.
func (tn *tenant) awaitHealthy(timeout time.Duration) {
	tn.g.Eventually(func(g Gomega) {
		var c etcdv1alpha2.EtcdCluster
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd"}, &c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(etcdv1alpha2.ReasonQuorumHealthy), cond.Message)
		g.Expect(c.Status.ReadyMembers).To(Equal(int32(1)))
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}
