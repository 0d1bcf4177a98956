package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Credentials read before a claim serve its check once, for the same
// Secret, and only while fresh; stale entries of restores that never
// checked are dropped.
func TestHeldCredentials(t *testing.T) {
	g := NewWithT(t)
	var h heldCreds
	c := s3object.Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	now := time.Unix(1000, 0)

	h.hold("a", "creds", c, now)
	_, ok := h.take("a", "other", now)
	g.Expect(ok).To(BeFalse(), "another Secret")
	_, ok = h.take("a", "creds", now)
	g.Expect(ok).To(BeFalse(), "an entry is used once, even after a miss")

	h.hold("a", "creds", c, now)
	got, ok := h.take("a", "creds", now.Add(credsHeldFor))
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(c))

	h.hold("a", "creds", c, now)
	_, ok = h.take("a", "creds", now.Add(credsHeldFor+time.Second))
	g.Expect(ok).To(BeFalse(), "too old")

	h.hold("stale", "creds", c, now)
	h.hold("b", "creds", c, now.Add(2*credsHeldFor))
	g.Expect(h.m).NotTo(HaveKey(BeEquivalentTo("stale")))
	h.forget("b")
	g.Expect(h.m).To(BeEmpty())
}

// A held key S3 refuses (rotated since the pre-flight read) is not a
// verdict: the check asks to be retried, and the retry reads the Secret.
// Without that, a rotation between the claim and the check would end the
// restore CredentialsUnavailable with the right key in the Secret.
func TestHeldKeyRefusedIsReadAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	g.Expect(k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testSecret},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(s3Creds.AccessKeyID), "AWS_SECRET_ACCESS_KEY": []byte(s3Creds.SecretAccessKey)}})).To(Succeed())
	b := ourBackup(ns, "b", "b-held")
	src, err := artifact.Resolve(b)
	g.Expect(err).NotTo(HaveOccurred())
	policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
	g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{LiveReader: k, Policy: policy}
	o := &observation{now: time.Now(), backup: b, source: src, opts: restoreoptions.Options{Verify: restoreoptions.VerifySize},
		job: &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore", UID: types.UID("job-" + ns)}}}

	r.creds.hold(o.job.UID, testSecret, s3object.Credentials{AccessKeyID: s3Creds.AccessKeyID, SecretAccessKey: "rotated-away"}, o.now)
	_, err = r.verifyArtifact(ctx, o)
	g.Expect(err).To(HaveOccurred(), "a refused held key is retried, not a verdict")
	v, err := r.verifyArtifact(ctx, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.ok).To(BeTrue(), "the retry reads the Secret: %s", v.message)
}
