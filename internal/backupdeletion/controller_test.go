package backupdeletion

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var (
	env   *testenv.Env
	s3    *minio.Client
	s3URL string
)

const bucket = "snapshots"

// TestMain starts the API server and a real S3 protocol server (gofakes3,
// in memory) that the driver's S3 client talks to over HTTP.
func TestMain(m *testing.M) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	s3URL = srv.URL
	var err error
	s3, err = minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4("AKID", "SECRET", ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1",
	})
	if err == nil {
		err = s3.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{})
	}
	if err != nil {
		panic(err)
	}
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

type harness struct {
	r   *Reconciler
	rec *events.FakeRecorder
}

// keys are the test's provenance keys: fixtures are signed with them as
// the backup path would sign them.
var keys = provenance.StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": []byte(strings.Repeat("k", 32))}}

// loopback lets the driver's endpoint policy reach the test's S3 server.
var loopback, _ = endpointpolicy.Parse(testenv.LoopbackCIDRs)

func newHarness() *harness {
	rec := events.NewFakeRecorder(1000)
	return &harness{r: &Reconciler{Client: env.Client, APIReader: env.Client, Recorder: rec, Keys: keys, Policy: loopback}, rec: rec}
}

// seal signs b as the driver does when it records a Backup.
func seal(g Gomega, b *backupsv1alpha1.Backup) {
	g.Expect(provenance.Seal(context.Background(), keys, b)).To(Succeed())
}

func (h *harness) reconcile(b *backupsv1alpha1.Backup) error {
	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	return err
}

func (h *harness) events() string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func newNamespace(g Gomega) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bdel-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func createSecret(g Gomega, ns string) {
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
		Data:       map[string][]byte{s3object.AccessKeyIDKey: []byte("AKID"), s3object.SecretAccessKeyKey: []byte("SECRET")},
	})).To(Succeed())
}

// fixture is an Etcd Backup with its EtcdSnapshot and its object in S3.
type fixture struct {
	backup   *backupsv1alpha1.Backup
	snapshot *etcdv1alpha2.EtcdSnapshot
	key      string
}

func newFixture(g Gomega, ns, name string, policy strategyv1alpha1.DeletionPolicy) *fixture {
	ctx := context.Background()
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-snap"},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1.LocalObjectReference{Name: "etcd"},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint: s3URL, Bucket: bucket, Key: ns + "/etcd/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}, ForcePathStyle: true,
			}},
		},
	}
	g.Expect(env.Client.Create(ctx, snap)).To(Succeed())

	rec := artifact.Record{
		SnapshotName: snap.Name,
		SnapshotUID:  string(snap.UID),
		Destination: strategyv1alpha1.EtcdS3Template{
			Bucket: bucket, Endpoint: s3URL, Key: ns + "/etcd/", ForcePathStyle: ptr.To(true),
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "s3-creds"},
		},
		DeletionPolicy: policy,
	}
	key := artifact.ObjectKey(rec.Destination.Key, snap.Name)
	_, err := s3.PutObject(ctx, bucket, key, bytes.NewReader([]byte("snapshot")), 8, minio.PutObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	underlying, err := rec.UnderlyingResources()
	g.Expect(err).NotTo(HaveOccurred())
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{LegacyFinalizer}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.Now(),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:               backupsv1alpha1.BackupPhaseReady,
			Artifact:            &backupsv1alpha1.BackupArtifact{URI: artifact.URI(bucket, key)},
			UnderlyingResources: underlying,
		},
	}
	seal(g, b)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	// The backup path hands the snapshot to its Backup.
	snap.OwnerReferences = []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup", Name: b.Name, UID: b.UID}}
	g.Expect(env.Client.Update(ctx, snap)).To(Succeed())
	return &fixture{backup: b, snapshot: snap, key: key}
}

func objectExists(g Gomega, key string) bool {
	_, err := s3.StatObject(context.Background(), bucket, key, minio.StatObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

func gone(g Gomega, obj client.Object) bool {
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(HaveOccurred())
	return false
}

// deleteBackup puts the finalizer on (first reconcile) and deletes the Backup.
func deleteBackup(g Gomega, h *harness, b *backupsv1alpha1.Backup) {
	g.Expect(h.reconcile(b)).To(Succeed())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), b)).To(Succeed())
	g.Expect(b.Finalizers).To(ContainElements(backupsv1alpha1.BackupCleanupFinalizer, LegacyFinalizer))
	g.Expect(env.Client.Delete(context.Background(), b)).To(Succeed())
}

func deleted(policy, object string) float64 {
	return testutil.ToFloat64(deletedTotal.WithLabelValues(policy, object))
}

func TestDeletePolicyRemovesTheObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-delete", strategyv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	before := deleted("Delete", objectDeleted)
	g.Expect(objectExists(g, f.key)).To(BeTrue())

	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())

	g.Expect(objectExists(g, f.key)).To(BeFalse())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(deleted("Delete", objectDeleted) - before).To(Equal(1.0))
	g.Expect(h.events()).To(ContainSubstring("ObjectDeleted"))

	// An object already gone is not an error.
	f2 := newFixture(g, ns, "b-delete-again", strategyv1alpha1.DeletionPolicyDelete)
	g.Expect(s3.RemoveObject(context.Background(), bucket, f2.key, minio.RemoveObjectOptions{})).To(Succeed())
	deleteBackup(g, h, f2.backup)
	g.Expect(h.reconcile(f2.backup)).To(Succeed())
	g.Expect(gone(g, f2.backup)).To(BeTrue())
}

func TestRetainPolicyKeepsTheObject(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	// No Secret at all: Retain never needs one.
	f := newFixture(g, ns, "b-retain", strategyv1alpha1.DeletionPolicyRetain)
	h := newHarness()
	before := deleted("Retain", objectRetained)

	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())

	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(deleted("Retain", objectRetained) - before).To(Equal(1.0))
}

func TestMissingSecretIsReportedAndRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-nosecret", strategyv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	deleteBackup(g, h, f.backup)

	err := h.reconcile(f.backup)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "a missing Secret is retried with backoff")
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonCredentialsUnavailable))

	var b backupsv1alpha1.Backup
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), &b)).To(Succeed())
	cond := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonCredentialsUnavailable))
	g.Expect(cond.Message).To(ContainSubstring("s3-creds"))
	g.Expect(b.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer))
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeFalse(), "nothing is removed before the object is")

	// Once the Secret exists, the retry finishes the job.
	createSecret(g, ns)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(objectExists(g, f.key)).To(BeFalse())
	g.Expect(gone(g, f.backup)).To(BeTrue())
}

func TestS3ErrorIsReportedAndRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-nobucket", strategyv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	// Point the Backup at a bucket the server does not have.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Status.UnderlyingResources = nil
	f.backup.Status.Artifact = nil
	f.backup.Spec.DriverMetadata[artifact.MetaBucket] = "no-such-bucket"
	seal(g, f.backup) // as the driver would have recorded it
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	deleteBackup(g, h, f.backup)

	err := h.reconcile(f.backup)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(gone(g, f.backup)).To(BeFalse())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(cond.Message).NotTo(ContainSubstring("SECRET"))
}

// With the skip annotation a verified Backup goes and its object stays.
func TestSkipAnnotationKeepsTheObject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-skip", strategyv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	f.backup.Annotations = map[string]string{SkipObjectDeletionAnnotation: "true"}
	g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
	deleteBackup(g, h, f.backup)
	before := deleted("Delete", objectSkipped)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeTrue())
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(deleted("Delete", objectSkipped) - before).To(Equal(1.0))
}

// An endpoint the policy refuses is never dialled: the cleanup stops with a
// terminal error and a Warning, the object and the Backup stay.
func TestRefusedEndpointIsNeverDialled(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-refused", strategyv1alpha1.DeletionPolicyDelete)
	h := newHarness()
	h.r.Policy = endpointpolicy.Policy{} // loopback denied
	deleteBackup(g, h, f.backup)
	err := h.reconcile(f.backup)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", err)
	g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectDeleteFailed))
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	g.Expect(gone(g, f.backup)).To(BeFalse())
}

// A Backup the driver cannot verify — edited to point elsewhere, written by
// hand, or not saying where its object is — goes without deleting any
// object, with a Warning saying why; its Verified condition shows it first.
func TestUnverifiedBackupsNeverDeleteObjects(t *testing.T) {
	ctx := context.Background()
	for name, edit := range map[string]func(b *backupsv1alpha1.Backup){
		"edited key": func(b *backupsv1alpha1.Backup) {
			b.Status.Artifact.URI = artifact.URI(bucket, "victim/etcd/theirs.db")
		},
		"signature removed": func(b *backupsv1alpha1.Backup) { delete(b.Spec.DriverMetadata, artifact.MetaProvenance) },
		"unresolvable": func(b *backupsv1alpha1.Backup) {
			b.Status.UnderlyingResources = nil
			delete(b.Spec.DriverMetadata, artifact.MetaBucket)
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(g)
			createSecret(g, ns)
			f := newFixture(g, ns, "b-forged", strategyv1alpha1.DeletionPolicyDelete)
			h := newHarness()
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
			edit(f.backup)
			g.Expect(env.Client.Update(ctx, f.backup)).To(Succeed())
			g.Expect(h.reconcile(f.backup)).To(Succeed())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
			cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonUnverified))

			before := deleted("Delete", objectKeptUnverified)
			g.Expect(env.Client.Delete(ctx, f.backup)).To(Succeed())
			g.Expect(h.reconcile(f.backup)).To(Succeed())
			g.Expect(gone(g, f.backup)).To(BeTrue())
			g.Expect(objectExists(g, f.key)).To(BeTrue())
			g.Expect(h.events()).To(ContainSubstring(backupsv1alpha1.BackupReasonObjectKeptUnverified))
			g.Expect(deleted("Delete", objectKeptUnverified) - before).To(Equal(1.0))
		})
	}
}

// A verified Backup shows so.
func TestVerifiedConditionOnLiveBackups(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-verified", strategyv1alpha1.DeletionPolicyRetain)
	g.Expect(newHarness().reconcile(f.backup)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.backup), f.backup)).To(Succeed())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionVerified)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
}

// Only Etcd Backups get the finalizer; a snapshot owned by another Backup
// is never deleted.
func TestScopeAndForeignSnapshots(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	h := newHarness()

	velero := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "velero"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(strategyv1alpha1.GroupVersion.Group), Kind: "Velero", Name: "v"},
			TakenAt:        metav1.Now(),
		},
	}
	g.Expect(env.Client.Create(ctx, velero)).To(Succeed())
	g.Expect(h.reconcile(velero)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(velero), velero)).To(Succeed())
	g.Expect(velero.Finalizers).To(BeEmpty())

	f := newFixture(g, ns, "b-foreign", strategyv1alpha1.DeletionPolicyRetain)
	f.snapshot.OwnerReferences[0].UID = "someone-else"
	g.Expect(env.Client.Update(ctx, f.snapshot)).To(Succeed())
	deleteBackup(g, h, f.backup)
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(gone(g, f.snapshot)).To(BeFalse())
}

// The object of a Backup an unfinished RestoreJob reads is kept until the
// restore ends; then the deletion completes.
func TestDeletionWaitsForARunningRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	f := newFixture(g, ns, "b-restoring", strategyv1alpha1.DeletionPolicyDelete)
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: f.backup.Name}},
	}
	g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	h := newHarness()
	deleteBackup(g, h, f.backup)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeFalse())
	g.Expect(objectExists(g, f.key)).To(BeTrue())
	cond := meta.FindStatusCondition(f.backup.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.BackupReasonInUseByRestore))
	g.Expect(backupOfRestore(ctx, rj)).To(HaveLen(1))

	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	g.Expect(env.Client.Status().Update(ctx, rj)).To(Succeed())
	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(gone(g, f.backup)).To(BeTrue())
	g.Expect(objectExists(g, f.key)).To(BeFalse())
}
