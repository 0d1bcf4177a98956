package restore

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// A safety Backup carries the signed deletion policy of the Backup it was
// taken to protect: with Delete its object goes with it (so the safety
// retention frees the bucket), with Retain (or unsigned) it stays.
func TestSafetyBackupFollowsTheSignedDeletionPolicy(t *testing.T) {
	for _, policy := range []driverv1alpha1.DeletionPolicy{driverv1alpha1.DeletionPolicyDelete, driverv1alpha1.DeletionPolicyRetain} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			deployApp(t, ns, appOpts{})
			startOperator(t, ns)
			b := unsignedBackup(ns, "b", "b-aaaaa")
			b.Spec.DriverMetadata[artifact.MetaDeletionPolicy] = string(policy)
			g.Expect(provenance.Seal(ctx, testKeys, b)).To(Succeed())
			g.Expect(k.Create(ctx, b)).To(Succeed())
			g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
			rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)

			safety := &backupsv1alpha1.Backup{}
			g.Expect(k.Get(ctx, keyOf(ns, safetyName(rj)), safety)).To(Succeed())
			v, err := provenance.Verify(ctx, testKeys, safety)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Verified).To(BeTrue(), "%+v", v)
			g.Expect(artifact.RecordedOf(safety).DeletionPolicy).To(Equal(policy))
		})
	}
}
