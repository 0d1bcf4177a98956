package adversarial

import (
	"context"
	"fmt"
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
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The platform's objects, as Cozystack names them.
const (
	className   = "cozy-default"
	credsSecret = "cozy-backups-creds"
)

// createPlatform creates the admin's strategy and class: every tenant's
// snapshots go to the one bucket under <namespace>/<app>/.
func createPlatform() {
	ctx := context.Background()
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	for _, o := range []client.Object{
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: "cozy-default-etcd"},
			Spec: strategyv1alpha1.EtcdSpec{DeletionPolicy: strategyv1alpha1.DeletionPolicyDelete, AllowHTTPEndpoint: true,
				Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
					Bucket: bucket, Endpoint: s3srv.URL, ForcePathStyle: &fps,
					Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: credsSecret},
				}}}},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: className},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: "cozy-default-etcd"},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			panic(err)
		}
	}
}

// tenant is one tenant namespace with its etcd application, as the chart,
// the platform and the operator would have made it.
type tenant struct {
	t   *testing.T
	g   *WithT
	ctx context.Context
	ns  string
	op  *testenv.Operator
}

func newTenant(t *testing.T, name string) *tenant {
	t.Helper()
	g := NewWithT(t)
	tn := &tenant{t: t, g: g, ctx: context.Background(), ns: name + "-" + rand.String(5)}
	replicas := int32(3)
	size := resource.MustParse("1Gi")
	cluster := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd", Labels: map[string]string{"helm.toolkit.fluxcd.io/name": "etcd"}},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas, Storage: &etcdv1alpha2.StorageSpec{Size: &size}},
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: credsSecret},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3Creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3Creds.SecretAccessKey}},
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}},
		cluster,
		&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}, Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}}}},
	}
	for i := range 3 {
		objs = append(objs, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: fmt.Sprintf("data-etcd-%d", i), Labels: map[string]string{"app.kubernetes.io/instance": "etcd"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
		})
	}
	tn.create(objs...)
	g.Expect(testenv.MarkHealthy(tn.ctx, env.Client, client.ObjectKeyFromObject(cluster))).To(Succeed())
	tn.op = testenv.StartOperator(t, env.Client, tn.ns, s3c)
	return tn
}

func (tn *tenant) create(objs ...client.Object) {
	tn.t.Helper()
	for _, o := range objs {
		tn.g.Expect(env.Client.Create(tn.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

func (tn *tenant) get(obj client.Object) client.Object {
	tn.t.Helper()
	tn.g.Expect(env.Client.Get(tn.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

func (tn *tenant) gone(obj client.Object) bool {
	return apierrors.IsNotFound(env.Client.Get(tn.ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
}

// backup takes a real backup of the tenant's cluster through a BackupJob.
func (tn *tenant) backup(name string, plan string) *backupsv1alpha1.Backup {
	tn.t.Helper()
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: className},
	}
	if plan != "" {
		job.Spec.PlanRef = &backupsv1alpha1.LocalObjectReference{Name: plan}
	}
	tn.create(job)
	tn.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), "status: %+v", job.Status)
	}).WithTimeout(60 * time.Second).Should(Succeed())
	b := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: job.Status.BackupRef.Name}}
	tn.get(b)
	tn.g.Expect(objectExists(keyOf(tn.g, b))).To(BeTrue())
	return b
}

// restore asks for an in-place restore and waits for its end.
func (tn *tenant) restore(name, backup, options string) *backupsv1alpha1.RestoreJob {
	tn.t.Helper()
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}}}
	if options != "" {
		rj.Spec.Options = &runtime.RawExtension{Raw: []byte(options)}
	}
	tn.create(rj)
	return tn.awaitRestore(rj)
}

func (tn *tenant) awaitRestore(rj *backupsv1alpha1.RestoreJob) *backupsv1alpha1.RestoreJob {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		g.Expect(rj.Status.Phase.IsTerminal()).To(BeTrue(), "status: %+v", rj.Status)
		g.Expect(rj.Finalizers).To(BeEmpty())
	}).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

// cluster is the tenant's live EtcdCluster.
func (tn *tenant) cluster() *etcdv1alpha2.EtcdCluster {
	c := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}}
	tn.get(c)
	return c
}

// untouched asserts the tenant's cluster is still the one it was, with its
// volumes, and its HelmRelease is not suspended.
func (tn *tenant) untouched(before *etcdv1alpha2.EtcdCluster) {
	tn.t.Helper()
	tn.g.Expect(tn.cluster().UID).To(Equal(before.UID), "the cluster was replaced")
	var pvcs corev1.PersistentVolumeClaimList
	tn.g.Expect(env.Client.List(tn.ctx, &pvcs, client.InNamespace(tn.ns))).To(Succeed())
	tn.g.Expect(pvcs.Items).To(HaveLen(3), "volumes were removed")
	tn.g.Expect(tn.helmRelease().Spec.Suspend).To(BeFalse(), "the HelmRelease was left suspended")
}

// reason is a job's Ready reason.
func reason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, backupsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// events lists the Event reasons about obj.
func (tn *tenant) events(obj client.Object) []string {
	var list eventsv1.EventList
	tn.g.Expect(env.Client.List(tn.ctx, &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() {
			out = append(out, e.Reason)
		}
	}
	return out
}

func keyOf(g Gomega, b *backupsv1alpha1.Backup) string {
	src, err := artifact.Resolve(b)
	g.Expect(err).NotTo(HaveOccurred())
	return src.Key
}

func objectExists(key string) bool {
	_, err := s3c.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	return err == nil
}

// forge copies a Backup into the attacker's namespace under a new name:
// everything the victim's Backup says, signature included.
func forge(from *backupsv1alpha1.Backup, ns, name string) *backupsv1alpha1.Backup {
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: from.Labels},
		Spec:       *from.Spec.DeepCopy(),
		Status:     *from.Status.DeepCopy(),
	}
	b.Status.Conditions = nil
	return b
}

func (tn *tenant) helmRelease() *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd"}}
	tn.get(hr)
	return hr
}
