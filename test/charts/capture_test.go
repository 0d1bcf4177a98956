package charts

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The capture controller, acting as the chart's ServiceAccount, makes a
// Plan's capture (the API server lets it create the Role and RoleBinding
// that grant the capture's token one verb on one record's status, which
// it may only grant holding that itself) and removes it again.
func TestCaptureRunsWithChartRBAC(t *testing.T) {
	g := NewWithT(t)
	cfg := installDriverRBAC(t, g)
	sa, err := client.New(cfg, client.Options{Scheme: driverscheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	const ns, strategy = "tenant-capture-rbac", "capture-s3"
	ensureNamespace(g, ns)
	keys := provenance.StaticKeys{ActiveID: "c", Keys: map[string][]byte{"c": []byte(strings.Repeat("c", 32))}}
	group := strategyv1alpha1.GroupVersion.Group
	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "daily", Annotations: map[string]string{planpolicy.PointInTime: "true"}},
		Spec: backupsv1alpha1.PlanSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd-capture", Schedule: backupsv1alpha1.PlanSchedule{Cron: "@daily"}},
	}
	for _, o := range []client.Object{
		&backupsv1alpha1.BackupClass{ObjectMeta: metav1.ObjectMeta{Name: "etcd-capture"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: strategy}}}}},
		&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: strategy},
			Spec: driverv1alpha1.StrategyPolicySpec{PointInTime: &driverv1alpha1.PointInTime{Enabled: true}}},
		plan,
	} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed(), "%T", o)
	}
	rec := artifact.Record{SnapshotName: "base", SnapshotUID: "uid-base", EtcdVersion: "3.6.11", DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://127.0.0.1:9000", Key: ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	g.Expect(err).NotTo(HaveOccurred())
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base", Labels: map[string]string{backupsv1alpha1.PlanNameLabel: "daily"}},
		Spec: backupsv1alpha1.BackupSpec{ApplicationRef: plan.Spec.ApplicationRef, PlanRef: &backupsv1alpha1.LocalObjectReference{Name: "daily"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: strategy},
			TakenAt:     metav1.NewTime(time.Now().Add(-time.Hour)), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/" + ns + "/etcd/base.db", SizeBytes: 1 << 20, Checksum: "sha256:" + strings.Repeat("ab", 32)}},
	}
	g.Expect(provenance.Seal(ctx, keys, b)).To(Succeed())
	m := driverv1alpha1.BackupManifest{Revision: 100, Keys: 10, DBSizeBytes: 1 << 20, InspectedAt: metav1.Now()}
	g.Expect(provenance.SealManifest(ctx, keys, b, &m)).To(Succeed())
	g.Expect(artifact.SetManifest(b, &m)).To(Succeed())
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())

	policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
	g.Expect(err).NotTo(HaveOccurred())
	r := &keeper.Reconciler{Client: sa, APIReader: sa, Recorder: events.NewFakeRecorder(10), Keys: keys, Policy: policy,
		Image: "ghcr.io/etcd-backup-driver/etcd-backup-driver:test", AllowedEndpointCIDRs: testenv.LoopbackCIDRs}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(plan)}
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	var records driverv1alpha1.CaptureProgressList
	g.Expect(env.Client.List(ctx, &records, client.InNamespace(ns))).To(Succeed())
	g.Expect(records.Items).To(HaveLen(1))
	name := records.Items[0].Name
	made := []client.Object{&appsv1.Deployment{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ServiceAccount{}}
	for _, o := range made {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)).To(Succeed(), "%T", o)
	}

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
	plan.Annotations[planpolicy.PointInTime] = "false"
	g.Expect(env.Client.Update(ctx, plan)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range append(made, &driverv1alpha1.CaptureProgress{}) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T: %v", o, err)
	}
}
