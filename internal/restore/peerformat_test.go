package restore

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Backups written by the Cozystack driver (unsigned) restore too, with the
// exact key, when they point where this namespace's strategy writes.
func TestRestorePeerFormatBackups(t *testing.T) {
	peerMeta := map[string]string{
		artifact.MetaSnapshotName: "nightly-q1w2e", artifact.MetaBucket: testBucket, artifact.MetaEndpoint: testEndpoint,
		artifact.MetaKey: testPrefix, artifact.MetaCredentialsName: testSecret, artifact.MetaForcePathStyle: "true",
	}
	peerUnderlying := &runtime.RawExtension{Raw: []byte(`{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1",
		"destination":{"s3":{"bucket":"` + testBucket + `","endpoint":"` + testEndpoint + `","key":"tenant/etcd","forcePathStyle":true,"credentialsSecretRef":{"name":"` + testSecret + `"}}}}`)}
	for name, tc := range map[string]struct {
		meta       map[string]string
		underlying *runtime.RawExtension
		uri        string
		wantKey    string
	}{
		"driverMetadata only":                {meta: peerMeta, wantKey: testPrefix + "nightly-q1w2e.db"},
		"underlyingResources only, with URI": {underlying: peerUnderlying, uri: "s3://" + testBucket + "/tenant/etcd/exact-x.db", wantKey: testPrefix + "exact-x.db"},
		"artifact URI wins over metadata":    {meta: peerMeta, uri: "s3://" + testBucket + "/tenant/etcd/y.db", wantKey: testPrefix + "y.db"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			deployApp(t, ns, appOpts{})
			startOperator(t, ns)
			b := unsignedBackup(ns, "peer", "unused")
			b.Spec.DriverMetadata, b.Status.UnderlyingResources, b.Status.Artifact = tc.meta, tc.underlying, nil
			if tc.uri != "" {
				b.Status.Artifact = &backupsv1alpha1.BackupArtifact{URI: tc.uri}
			}
			putObject(tc.wantKey, testenv.Snapshot(2, tc.wantKey))
			g.Expect(k.Create(ctx, b)).To(Succeed())
			g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "peer", ""))).To(Succeed())
			rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
			g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal(tc.wantKey))
			// The safety snapshot went next to the restored one.
			safety := &backupsv1alpha1.Backup{}
			g.Expect(k.Get(ctx, keyOf(ns, safetyName(rj)), safety)).To(Succeed())
			src, err := artifact.Resolve(safety)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(src.Key).To(Equal(testPrefix + safety.Name + ".db"))
		})
	}
}
