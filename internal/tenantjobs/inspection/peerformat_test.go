package inspection

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// peerSnapshot has exactly the fields of the peer's EtcdBackupSnapshot
// (peer-contracts.md D.2), which it decodes status.underlyingResources into
// with json.Unmarshal.
type peerSnapshot struct {
	Kind        string `json:"kind"`
	APIVersion  string `json:"apiVersion"`
	Destination struct {
		S3 *struct {
			Bucket               string `json:"bucket"`
			Endpoint             string `json:"endpoint"`
			Key                  string `json:"key,omitempty"`
			Region               string `json:"region,omitempty"`
			ForcePathStyle       *bool  `json:"forcePathStyle,omitempty"`
			CredentialsSecretRef struct {
				Name string `json:"name"`
			} `json:"credentialsSecretRef"`
		} `json:"s3"`
	} `json:"destination"`
	Parameters map[string]string `json:"parameters,omitempty"`
}

// A Backup the driver wrote and then inspected and rehearsed, read back
// from the API server with Cozystack's Backup CRD installed (every suite
// installs it), still decodes as the peer's EtcdBackupSnapshot: its
// records sit beside the peer's fields, which are all there as written.
func TestARecordedBackupStillDecodesAsThePeers(t *testing.T) {
	h := newHarness(t)
	g := h.g
	b := h.backup("nightly-1", 0)
	h.reconcile(b)
	h.finish(h.job(b), inspected(manifest(10, "default", "shop")), nil)
	h.reconcile(b)
	before := b.DeepCopy()
	g.Expect(artifact.SetLastRehearsal(b, &driverv1alpha1.RehearsalRecord{RestoreJob: "drill", Succeeded: true,
		CompletedAt: metav1.Now(), Message: "booted"})).To(Succeed())
	g.Expect(env.Client.Patch(h.ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())

	var members map[string]json.RawMessage
	g.Expect(json.Unmarshal(b.Status.UnderlyingResources.Raw, &members)).To(Succeed())
	g.Expect(members).To(HaveKey("manifest"), "the API server kept the manifest")
	g.Expect(members).To(HaveKey("lastRehearsal"), "the API server kept the last rehearsal")

	var peer peerSnapshot
	g.Expect(json.Unmarshal(b.Status.UnderlyingResources.Raw, &peer)).To(Succeed())
	g.Expect(peer.Kind).To(Equal("EtcdBackupSnapshot"))
	g.Expect(peer.APIVersion).To(Equal("backups.cozystack.io/v1alpha1"))
	g.Expect(peer.Destination.S3).NotTo(BeNil())
	s3 := peer.Destination.S3
	g.Expect([]string{s3.Bucket, s3.Endpoint, s3.Key, s3.CredentialsSecretRef.Name}).To(Equal(
		[]string{"bkt", "https://127.0.0.1:9000", h.ns + "/etcd/", "creds"}))
	g.Expect(s3.ForcePathStyle).To(BeNil(), "not recorded, not written")
	g.Expect(peer.Parameters).To(BeNil())

	// And it is the driver's as it was: signed, its manifest with it.
	v, err := provenance.Verify(h.ctx, keys, b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Verified).To(BeTrue(), v.Message)
	g.Expect(provenance.VerifyManifest(h.ctx, keys, b)).To(BeTrue())
	g.Expect(artifact.LastRehearsal(b).RestoreJob).To(Equal("drill"))
}
