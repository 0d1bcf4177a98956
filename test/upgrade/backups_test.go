package upgrade

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// legacyBackup creates a Ready, inspected Etcd Backup as the earlier
// release wrote it: signed, its manifest (signed for it, then changed by
// edit when set) in status.manifest and its last rehearsal in
// status.lastRehearsal, fields the earlier CRD stores.
func legacyBackup(g Gomega, ns, name string, edit func(m map[string]any)) *backupsv1alpha1.Backup {
	ctx := context.Background()
	rec := artifact.Record{SnapshotName: name, SnapshotUID: "uid-" + name, EtcdVersion: "3.6.11",
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://s3.example.com", Key: ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	g.Expect(err).NotTo(HaveOccurred())
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: "nightly"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/" + ns + "/etcd/" + name, SizeBytes: 4 << 20,
				Checksum: "sha256:" + strings.Repeat("ab", 32)}},
	}
	g.Expect(provenance.Seal(ctx, testKeys, b)).To(Succeed())
	m := &driverv1alpha1.BackupManifest{
		InspectedAt: metav1.NewTime(time.Date(2026, 12, 1, 2, 5, 0, 0, time.UTC)),
		Revision:    1500, Keys: 300, DBSizeBytes: 4 << 20,
		Keyspaces: []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Objects: 290, Namespaces: 2,
			Resources: []driverv1alpha1.ObjectCount{{Name: "pods", Count: 40}}, NamespaceNames: []string{"default", "shop"}}},
	}
	g.Expect(provenance.SealManifest(ctx, testKeys, b, m)).To(Succeed())
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())

	manifest := toMap(g, m)
	if edit != nil {
		edit(manifest)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"manifest": manifest,
		"lastRehearsal": map[string]any{"restoreJob": "drill-1", "succeeded": true,
			"completedAt": "2026-12-02T04:00:00Z", "message": "booted and read back"},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	out, err := dynamic.NewForConfigOrDie(env.Config).Resource(backupsv1alpha1.GroupVersion.WithResource("backups")).Namespace(ns).
		Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	stored, _, _ := unstructured.NestedMap(out.Object, "status", "manifest")
	g.Expect(stored).NotTo(BeEmpty(), "the earlier CRD stores status.manifest")
	return b
}

func toMap(g Gomega, v any) map[string]any {
	raw, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	var out map[string]any
	g.Expect(json.Unmarshal(raw, &out)).To(Succeed())
	return out
}

// legacyStatus is b's status as stored, with the fields the typed Backup
// no longer has.
func legacyStatus(g Gomega, b *backupsv1alpha1.Backup) map[string]any {
	u, err := dynamic.NewForConfigOrDie(env.Config).Resource(backupsv1alpha1.GroupVersion.WithResource("backups")).Namespace(b.Namespace).
		Get(context.Background(), b.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	return status
}

func inspect(g Gomega, r *inspection.Reconciler, b *backupsv1alpha1.Backup) {
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), b)).To(Succeed())
}

// A driver upgraded over Backups written with the earlier CRD's fields
// reads them once, writes them where they live now
// (status.underlyingResources, beside the peer's fields), removes the old
// fields and says so in an Event. The manifest moves as it was signed and
// verifies there, so the Backup is not inspected again; a manifest that
// does not verify (a tenant edited it) is not moved: the Backup is then
// inspected again, and nothing the tenant wrote is signed.
func TestRecordsOfTheEarlierBackupCRDAreMovedOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	kept := legacyBackup(g, ns, "kept", nil)
	forged := legacyBackup(g, ns, "forged", func(m map[string]any) { m["keys"] = int64(900) })
	rec := events.NewFakeRecorder(100)
	r := &inspection.Reconciler{Client: env.Client, APIReader: env.Client, Recorder: rec, Keys: testKeys}

	inspect(g, r, kept)
	g.Expect(legacyStatus(g, kept)).NotTo(HaveKey("manifest"))
	g.Expect(legacyStatus(g, kept)).NotTo(HaveKey("lastRehearsal"))
	m := artifact.Manifest(kept)
	g.Expect(m).NotTo(BeNil(), "the manifest moved to status.underlyingResources")
	g.Expect(m.Keys).To(Equal(int64(300)))
	g.Expect(provenance.VerifyManifest(ctx, testKeys, kept)).To(BeTrue(), "it verifies where it lives now")
	g.Expect(artifact.LastRehearsal(kept)).To(And(HaveField("RestoreJob", "drill-1"), HaveField("Succeeded", true),
		HaveField("Message", "booted and read back")))
	var peer struct{ Kind, APIVersion string }
	g.Expect(json.Unmarshal(kept.Status.UnderlyingResources.Raw, &peer)).To(Succeed())
	g.Expect(peer.Kind).To(Equal("EtcdBackupSnapshot"), "the peer's fields stay")
	g.Expect(provenance.Verify(ctx, testKeys, kept)).To(HaveField("Verified", BeTrue()))
	evs := testenv.Drain(rec.Events)
	g.Expect(evs).To(ConsistOf(And(ContainSubstring(backupsv1alpha1.BackupReasonRecordsMigrated),
		ContainSubstring("status.manifest moved to status.underlyingResources.manifest"),
		ContainSubstring("status.lastRehearsal moved to status.underlyingResources.lastRehearsal"))))

	// Once: the next reconcile finds the manifest verified and does
	// nothing: no Event, no inspection Job.
	before := kept.ResourceVersion
	inspect(g, r, kept)
	g.Expect(kept.ResourceVersion).To(Equal(before))
	g.Expect(testenv.Drain(rec.Events)).To(BeEmpty())
	var jobs batchv1.JobList
	g.Expect(env.Client.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())

	inspect(g, r, forged)
	g.Expect(legacyStatus(g, forged)).NotTo(HaveKey("manifest"))
	g.Expect(artifact.Manifest(forged)).To(BeNil(), "a manifest that does not verify is not moved")
	g.Expect(artifact.LastRehearsal(forged)).NotTo(BeNil())
	g.Expect(testenv.Drain(rec.Events)).To(ConsistOf(And(ContainSubstring(backupsv1alpha1.BackupReasonRecordsMigrated),
		ContainSubstring("status.manifest removed (it does not verify: the Backup is inspected again)"))))
}
