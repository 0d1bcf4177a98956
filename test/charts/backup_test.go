package charts

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// completeBackup drives one BackupJob to Succeeded against a running
// driver: the admin objects and the tenant's application are created with
// admin rights, the test plays the etcd-operator, and everything the driver
// does happens with whatever rights its manager has. It returns the Ready
// Backup.
func completeBackup(g *WithT, ctx context.Context) *backupsv1alpha1.Backup {
	const ns = tenantNamespace
	ensureNamespace(g, ns)
	c := env.Client
	group, appGroup := strategyv1alpha1.GroupVersion.Group, backupsv1alpha1.DefaultApplicationAPIGroup
	g.Expect(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3Creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3Creds.SecretAccessKey},
	})).To(Succeed())
	fps := true
	g.Expect(c.Create(ctx, &driverv1alpha1.StrategyPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-strategy"},
		Spec:       driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-strategy"},
		Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
			S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: "etcd-backups", Endpoint: s3srv.URL, ForcePathStyle: &fps,
				Key:                  "{{ .Application.metadata.namespace }}/",
				CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "s3-creds"},
			},
		}}},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-class"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: "rbac-strategy"},
			Application: backupsv1alpha1.ApplicationSelector{APIGroup: &appGroup, Kind: "Etcd"},
		}}},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}})).To(Succeed())
	replicas := int32(3)
	cluster := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas},
	}
	g.Expect(c.Create(ctx, cluster)).To(Succeed())
	meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumHealthy", Message: "test"})
	cluster.Status.ReadyMembers = 3
	g.Expect(c.Status().Update(ctx, cluster)).To(Succeed())

	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac-backup"},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{APIGroup: &appGroup, Kind: "Etcd", Name: "etcd"},
			BackupClassName: "rbac-class",
		},
	}
	g.Expect(c.Create(ctx, job)).To(Succeed())

	// The etcd-operator's part (the test's operator): the snapshot
	// completes in S3.
	var snap etcdv1alpha2.EtcdSnapshot
	g.Eventually(func() (int, error) {
		var list etcdv1alpha2.EtcdSnapshotList
		err := c.List(ctx, &list, client.InNamespace(ns))
		if len(list.Items) == 1 {
			snap = list.Items[0]
		}
		return len(list.Items), err
	}).WithTimeout(60*time.Second).Should(Equal(1), "the driver creates one EtcdSnapshot")

	g.Eventually(func() (backupsv1alpha1.BackupJobPhase, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(job), job)
		return job.Status.Phase, err
	}).WithTimeout(60*time.Second).Should(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), func() string { return fmt.Sprintf("%+v", job.Status) })
	backup := &backupsv1alpha1.Backup{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Status.BackupRef.Name}, backup)).To(Succeed())
	g.Expect(backup.Status.Phase).To(Equal(backupsv1alpha1.BackupPhaseReady))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&snap), &snap)).To(Succeed())
	g.Expect(backup.Status.Artifact.URI).To(Equal(snap.Status.Artifact.URI))
	return backup
}
