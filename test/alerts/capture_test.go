package alerts

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// captureLagging turns point-in-time capture on in tenant-capture: the
// StrategyPolicy of strategy s3 allows it with a lag of 60 s, Plan "pitr"
// asks for it, and a good Backup taken at takenAt (signed, with a signed
// manifest) is its base. Once the driver has made the capture's record,
// the test writes its status as the capture Pod would, with the newest
// change received at reported. It returns the Plan's name.
func captureLagging(ctx context.Context, g Gomega, c client.Client, keys provenance.Keys, takenAt, reported time.Time) string {
	const ns, name = "tenant-capture", "pitr"
	g.Expect(c.Create(ctx, &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s3"},
		Spec: driverv1alpha1.StrategyPolicySpec{PointInTime: &driverv1alpha1.PointInTime{Enabled: true, MaxLagSeconds: ptr(int32(60))}}})).To(Succeed())
	plan := etcdPlan(ns, name, "@daily")
	plan.Annotations = map[string]string{planpolicy.PointInTime: "true"}
	g.Expect(c.Create(ctx, plan)).To(Succeed())

	rec := artifact.Record{SnapshotName: "base", SnapshotUID: "uid-base", EtcdVersion: "3.6.11",
		DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "etcd-backups", Endpoint: "https://127.0.0.1:9000", Key: ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "s3-creds"}}}
	u, err := rec.UnderlyingResources()
	g.Expect(err).NotTo(HaveOccurred())
	b := etcdBackup(ns, "base", takenAt, map[string]string{backupsv1alpha1.PlanNameLabel: name})
	b.Spec.PlanRef = &backupsv1alpha1.LocalObjectReference{Name: name}
	b.Spec.DriverMetadata = rec.DriverMetadata()
	b.Status.UnderlyingResources = u
	b.Status.Artifact.Checksum = "sha256:" + strings.Repeat("ab", 32)
	g.Expect(provenance.Seal(ctx, keys, b)).To(Succeed())
	m := driverv1alpha1.BackupManifest{Revision: 100, Keys: 10, DBSizeBytes: 1 << 20, InspectedAt: metav1.NewTime(takenAt)}
	g.Expect(provenance.SealManifest(ctx, keys, b, &m)).To(Succeed())
	g.Expect(artifact.SetManifest(b, &m)).To(Succeed())
	g.Expect(c.Create(ctx, b)).To(Succeed())

	var cp driverv1alpha1.CaptureProgress
	g.Eventually(func(g Gomega) {
		var list driverv1alpha1.CaptureProgressList
		g.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		cp = list.Items[0]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	before := cp.DeepCopy()
	at := metav1.NewMicroTime(reported)
	cp.Status.BaseRevision, cp.Status.Segments, cp.Status.NewestRevision = cp.Spec.BaseRevision, 12, 4200
	cp.Status.NewestTime, cp.Status.UpdatedAt = &at, &at
	g.Expect(c.Status().Patch(ctx, &cp, client.MergeFrom(before))).To(Succeed())
	return name
}
