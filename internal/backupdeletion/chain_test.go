package backupdeletion

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// chained makes f's Backup the base of a chain at revision rev, as the
// driver records it (a sha256, the provenance signature, a manifest the
// driver signed), taken at takenAt for the Plan plan (if any), and writes
// the chain's index and two segments where the capture writes them. It
// returns the chain's keys.
func chained(g Gomega, f *fixture, rev int64, takenAt time.Time, plan string) []string {
	ctx := context.Background()
	b := f.backup
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
	if plan != "" {
		b.Labels = map[string]string{backupsv1alpha1.PlanNameLabel: plan}
		b.Spec.PlanRef = &backupsv1alpha1.LocalObjectReference{Name: plan}
	}
	b.Spec.TakenAt = metav1.NewTime(takenAt)
	b.Status.Artifact.Checksum = "sha256:" + strings.Repeat("ab", 32)
	seal(g, b)
	m := driverv1alpha1.BackupManifest{Revision: rev, Keys: 10, DBSizeBytes: 1 << 20, InspectedAt: metav1.NewTime(takenAt)}
	g.Expect(provenance.SealManifest(ctx, keys, b, &m)).To(Succeed())
	g.Expect(artifact.SetManifest(b, &m)).To(Succeed())
	g.Expect(env.Client.Update(ctx, b)).To(Succeed())

	prefix := changelog.ChainPrefix(f.key[:strings.LastIndex(f.key, "/")], rev)
	out := []string{changelog.IndexKey(prefix), changelog.SegmentKey(prefix, 0, rev+1), changelog.SegmentKey(prefix, 1, rev+40)}
	for _, k := range out {
		put(g, k)
	}
	return out
}

func put(g Gomega, key string) {
	_, err := s3.PutObject(context.Background(), bucket, key, bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

func existing(g Gomega, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if objectExists(g, k) {
			out = append(out, k)
		}
	}
	return out
}

// Deleting a Backup with policy Delete deletes the chain that follows it
// with its snapshot; another Backup's chain, and keys that only look like
// the chain's (its prefix without the slash, with more digits or letters
// after the revision), stay.
func TestDeletePolicyDeletesTheChainOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	t0 := time.Now().Add(-time.Hour)
	old := newFixture(g, ns, "b-old", driverv1alpha1.DeletionPolicyDelete)
	oldChain := chained(g, old, 100, t0, "")
	newer := newFixture(g, ns, "b-new", driverv1alpha1.DeletionPolicyDelete)
	newChain := chained(g, newer, 200, t0.Add(time.Minute), "")
	dir := ns + "/etcd/changes/"
	lookAlikes := []string{dir + "100", dir + "100x/index.json", dir + "1000/index.json", dir + "10/index.json", ns + "/other/changes/100/index.json"}
	for _, k := range lookAlikes {
		put(g, k)
	}
	h := newHarness()

	deleteBackup(g, h, old.backup)
	g.Expect(h.reconcile(old.backup)).To(Succeed())

	g.Expect(gone(g, old.backup)).To(BeTrue())
	g.Expect(existing(g, append(oldChain, old.key)...)).To(BeEmpty(), "the deleted Backup's chain and snapshot")
	g.Expect(existing(g, append(newChain, newer.key)...)).To(HaveLen(4), "the kept Backup's chain and snapshot")
	g.Expect(existing(g, lookAlikes...)).To(Equal(lookAlikes))
	g.Expect(h.events()).To(And(ContainSubstring("ChainDeleted"), ContainSubstring("deleted the 3 objects"), ContainSubstring(dir+"100/")))
}

// Retain keeps the chain with the snapshot.
func TestRetainPolicyKeepsTheChain(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-retain", driverv1alpha1.DeletionPolicyRetain)
	chain := chained(g, f, 100, time.Now(), "")
	h := newHarness()

	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())

	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(existing(g, append(chain, f.key)...)).To(HaveLen(4))
}

// crashing fails the snapshot's delete, as a driver stopping between the
// chain and the snapshot would leave it; failUnder fails the chain's.
type crashing struct {
	s3object.Store
	failUnder error
	unders    int
}

func (c *crashing) Delete(context.Context, s3object.Location, s3object.Credentials) error {
	return errors.New("the driver stopped here")
}

func (c *crashing) DeleteUnder(ctx context.Context, loc s3object.Location, creds s3object.Credentials, max int) (int, error) {
	c.unders++
	if c.failUnder != nil {
		return 0, c.failUnder
	}
	return c.Store.DeleteUnder(ctx, loc, creds, max)
}

// A cleanup that stopped after the chain and before the snapshot resumes:
// the chain is found empty, the snapshot deleted, the Backup released. A
// chain whose delete fails is reported, retried, and keeps the snapshot.
func TestAStoppedChainDeletionResumes(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-crash", driverv1alpha1.DeletionPolicyDelete)
	chain := chained(g, f, 100, time.Now(), "")
	h := newHarness()
	deleteBackup(g, h, f.backup)

	h.r.Objects = &crashing{Store: s3object.Store{Policy: loopback, AllowHTTP: true}, failUnder: errors.New("S3 said no")}
	err := h.reconcile(f.backup)
	g.Expect(err).To(MatchError(ContainSubstring("S3 said no")))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonChainDeleteFailed))
	g.Expect(existing(g, append(chain, f.key)...)).To(HaveLen(4), "nothing goes while the chain cannot")
	g.Expect(cleanupReason(g, f.backup)).To(Equal(backupsv1alpha1.BackupReasonChainDeleteFailed))

	h.r.Objects = &crashing{Store: s3object.Store{Policy: loopback, AllowHTTP: true}}
	g.Expect(h.reconcile(f.backup)).NotTo(Succeed())
	g.Expect(existing(g, chain...)).To(BeEmpty())
	g.Expect(existing(g, f.key)).To(HaveLen(1))
	g.Expect(gone(g, f.backup)).To(BeFalse())
	g.Expect(gone(g, f.snapshot)).To(BeFalse())

	h.r.Objects = nil
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(existing(g, f.key)).To(BeEmpty())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
}

// endless finds one more object under the chain every time, as a chain
// still being written into would.
type endless struct{ crashing }

func (e *endless) DeleteUnder(context.Context, s3object.Location, s3object.Credentials, int) (int, error) {
	e.unders++
	return 1, nil
}

// A chain that never empties holds one attempt for chainBatches listings,
// then is reported and retried with backoff, never deleting the snapshot.
func TestAChainThatNeverEmptiesIsBounded(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-endless", driverv1alpha1.DeletionPolicyDelete)
	chained(g, f, 100, time.Now(), "")
	h := newHarness()
	deleteBackup(g, h, f.backup)
	e := &endless{}
	h.r.Objects = e

	err := h.reconcile(f.backup)
	g.Expect(err).To(MatchError(errChainNotEmpty))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(e.unders).To(Equal(chainBatches))
	g.Expect(cleanupReason(g, f.backup)).To(Equal(backupsv1alpha1.BackupReasonChainDeleteFailed))
	g.Expect(existing(g, f.key)).To(HaveLen(1))
	g.Expect(gone(g, f.backup)).To(BeFalse())
}

func cleanupReason(g Gomega, b *backupsv1alpha1.Backup) string {
	var cur backupsv1alpha1.Backup
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &cur)).To(Succeed())
	cond := meta.FindStatusCondition(cur.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond).NotTo(BeNil())
	return cond.Reason
}

// A capture rolled or stopped because its base is being deleted uploads
// what it holds on SIGTERM: where a capture runs, the cleanup deletes the
// chain at once, then lists it a last time chainSettle after the deletion
// began, before it deletes the snapshot, so a late segment goes too.
// Where none runs, nothing waits.
func TestALateUploadIsDeletedWithTheChain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-late", driverv1alpha1.DeletionPolicyDelete)
	chain := chained(g, f, 100, time.Now(), "")
	// A capture runs in the namespace (its record is what the cleanup
	// looks for).
	g.Expect(env.Client.Create(ctx, &driverv1alpha1.CaptureProgress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-capture-x"},
		Spec:       driverv1alpha1.CaptureProgressSpec{Plan: "daily", BaseBackup: f.backup.Name, BaseRevision: 100},
	})).To(Succeed())
	h := newHarness()
	deleteBackup(g, h, f.backup)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	clk := clocktesting.NewFakePassiveClock(f.backup.DeletionTimestamp.Time)
	h.r.Clock = clk

	res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.backup)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(chainSettle))
	g.Expect(existing(g, chain...)).To(BeEmpty())
	g.Expect(existing(g, f.key)).To(HaveLen(1), "the snapshot waits for the last listing")
	g.Expect(gone(g, f.backup)).To(BeFalse())

	prefix := ns + "/etcd/changes/100"
	late := []string{changelog.SegmentKey(prefix, 2, 180), changelog.IndexKey(prefix)}
	for _, k := range late {
		put(g, k)
	}
	clk.SetTime(f.backup.DeletionTimestamp.Add(chainSettle))
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(existing(g, late...)).To(BeEmpty())
	g.Expect(existing(g, f.key)).To(BeEmpty())
	g.Expect(gone(g, f.backup)).To(BeTrue())
}

// Without a capture in the namespace (every inspected Backup has a signed
// revision, most have no chain being written), the cleanup does not wait.
func TestWithoutACaptureNothingWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-nocapture", driverv1alpha1.DeletionPolicyDelete)
	chain := chained(g, f, 100, time.Now(), "")
	h := newHarness()
	deleteBackup(g, h, f.backup)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	h.r.Clock = clocktesting.NewFakePassiveClock(f.backup.DeletionTimestamp.Time)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(existing(g, append(chain, f.key)...)).To(BeEmpty())
	g.Expect(gone(g, f.backup)).To(BeTrue())
}
