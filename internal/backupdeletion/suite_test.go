package backupdeletion

import (
	"bytes"
	"context"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
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
	return strings.Join(testenv.Drain(h.rec.Events), "\n")
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

func newFixture(g Gomega, ns, name string, policy driverv1alpha1.DeletionPolicy) *fixture {
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
