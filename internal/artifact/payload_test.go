package artifact

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// peerPayload is the payload as the peer writes it, with a member of a
// later release beside.
const peerPayload = `{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1",` +
	`"destination":{"s3":{"bucket":"bkt","endpoint":"https://s3.example.com","key":"tenant/etcd/","credentialsSecretRef":{"name":"creds"}}},` +
	`"parameters":{"tier":"gold"},"later":{"x":1}}`

// A record written into the payload changes that member alone: a merge
// patch of the Backup carries it and nothing else, and every other member
// (the peer's, a later release's) stays as written.
func TestARecordTouchesNothingElse(t *testing.T) {
	g := NewWithT(t)
	b := backupOf(nil, &runtime.RawExtension{Raw: []byte(peerPayload)}, "s3://bkt/tenant/etcd/x.db")
	before := b.DeepCopy()
	m := &driverv1alpha1.BackupManifest{InspectedAt: metav1.Unix(1700000000, 0), Revision: 7, Keys: 3, DBSizeBytes: 4096, Signature: "m1.k.s"}
	g.Expect(SetManifest(b, m)).To(Succeed())
	patch, err := client.MergeFrom(before).Data(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(patch)).To(MatchJSON(`{"status":{"underlyingResources":{"manifest":` +
		`{"inspectedAt":"2023-11-14T22:13:20Z","revision":7,"keys":3,"dbSizeBytes":4096,"signature":"m1.k.s"}}}}`))
	g.Expect(Manifest(b)).To(Equal(m))

	before = b.DeepCopy()
	g.Expect(SetLastRehearsal(b, &driverv1alpha1.RehearsalRecord{RestoreJob: "drill", Succeeded: true, CompletedAt: metav1.Unix(1700000000, 0)})).To(Succeed())
	patch, err = client.MergeFrom(before).Data(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(patch)).To(MatchJSON(`{"status":{"underlyingResources":{"lastRehearsal":` +
		`{"restoreJob":"drill","succeeded":true,"completedAt":"2023-11-14T22:13:20Z"}}}}`))

	before = b.DeepCopy()
	g.Expect(SetManifest(b, nil)).To(Succeed())
	patch, err = client.MergeFrom(before).Data(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(patch)).To(MatchJSON(`{"status":{"underlyingResources":{"manifest":null}}}`))

	src, err := Resolve(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]string{src.Bucket, src.Endpoint, src.Prefix, src.SecretName, src.Key}).To(Equal(
		[]string{"bkt", "https://s3.example.com", "tenant/etcd/", "creds", "tenant/etcd/x.db"}))
}

// A record a tenant spoiled reads as absent and hides neither the other
// records nor where the snapshot is; a manifest no inspection makes (more
// keyspaces than a Counter lists) is no manifest.
func TestASpoiledRecordReadsAsAbsent(t *testing.T) {
	g := NewWithT(t)
	raw := `{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1",` +
		`"destination":{"s3":{"bucket":"bkt","endpoint":"https://s3.example.com","credentialsSecretRef":{"name":"creds"}}},` +
		`"manifest":"not a manifest","lastRehearsal":{"restoreJob":"drill","succeeded":true,"completedAt":"2023-11-14T22:13:20Z"}}`
	b := backupOf(nil, &runtime.RawExtension{Raw: []byte(raw)}, "s3://bkt/x.db")
	g.Expect(Manifest(b)).To(BeNil())
	g.Expect(LastRehearsal(b)).NotTo(BeNil())
	_, err := Resolve(b)
	g.Expect(err).NotTo(HaveOccurred())

	wide := &driverv1alpha1.BackupManifest{Revision: 1, Keys: 5, DBSizeBytes: 1}
	for range driverv1alpha1.ManifestMaxKeyspaces + 1 {
		wide.Keyspaces = append(wide.Keyspaces, driverv1alpha1.KeyspaceManifest{Prefix: "/p"})
	}
	g.Expect(SetManifest(b, wide)).To(Succeed())
	g.Expect(Manifest(b)).To(BeNil())

	// No payload: nothing to keep a record beside.
	bare := backupOf(nil, nil, "")
	g.Expect(Manifest(bare)).To(BeNil())
	g.Expect(SetManifest(bare, wide)).To(MatchError(ErrNoPayload))
	g.Expect(SetManifest(bare, nil)).To(Succeed())
}
