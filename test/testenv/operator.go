package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
)

// Operator plays the etcd-operator and Flux's helm-controller in one
// namespace, by writing what they would write: it completes EtcdSnapshots
// (storing a real etcd-shaped snapshot object in S3 and reporting its URI,
// size and sha256), removes the member PVCs of a deleted cluster, brings a
// re-created cluster up (or fails its bootstrap, when told), and marks
// resumed HelmReleases Ready. Envtest suites use it where the real
// stand-ins (internal/sandbox) would be too slow.
type Operator struct {
	c  client.Client
	ns string
	s3 *minio.Client

	mu sync.Mutex
	// HoldBootstrap keeps re-created clusters from becoming healthy.
	HoldBootstrap bool
	// FailBootstrap fails the bootstrap of clusters whose restore key
	// satisfies it (BootstrapFailed, as the operator does past its
	// progress deadline).
	FailBootstrap func(key string) bool
	// FailSnapshots fails every EtcdSnapshot.
	FailSnapshots bool
	// StallSnapshots marks new EtcdSnapshots Started and never finishes
	// them, as a snapshot is left when the operator dies under it.
	StallSnapshots bool
	// BootstrapWhen, when set, must hold before a re-created cluster
	// becomes healthy (tests use it to see every waiting state).
	BootstrapWhen func(ctx context.Context) bool
	// RefuseStaging makes the staging Jobs of objects whose key satisfies
	// it fail as the real one does when the staging binary refuses the
	// artifact (staging.ExitRefused, podFailurePolicy).
	RefuseStaging func(key string) bool
	// HoldStaging keeps staging Jobs running.
	HoldStaging bool
	// KeyFromSecret makes snapshots go to the destination's endpoint with
	// the key of the Secret the snapshot names, read when the snapshot
	// starts, as the operator's Pods do (instead of the s3 client given to
	// StartOperator).
	KeyFromSecret bool
	// S3CA is the CA an https destination's certificate chains to, for
	// KeyFromSecret's clients (the operator's Pods are handed the
	// platform's CA); nil means the system's roots.
	S3CA *s3ca.CA
	// HoldSnapshots leaves new EtcdSnapshots alone, for a test to play the
	// snapshot agent itself.
	HoldSnapshots bool
	// HoldHelmRelease leaves resumed HelmReleases unreconciled, as Flux
	// does while it upgrades (or when it is down).
	HoldHelmRelease bool
}

// StartOperator runs an Operator for ns until the test ends. s3 is a client
// of the S3 server snapshots go to (their destination's endpoint is not
// dialled: tests point it at the same server).
func StartOperator(t testing.TB, c client.Client, ns string, s3 *minio.Client) *Operator {
	ctx, cancel := context.WithCancel(context.Background())
	op := &Operator{c: c, ns: ns, s3: s3}
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			op.step(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return op
}

// Set changes the operator's behaviour.
func (op *Operator) Set(f func(op *Operator)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

func (op *Operator) step(ctx context.Context) {
	op.mu.Lock()
	hold, failBoot, failSnaps, stall, when := op.HoldBootstrap, op.FailBootstrap, op.FailSnapshots, op.StallSnapshots, op.BootstrapWhen
	op.mu.Unlock()
	if when != nil && !hold {
		hold = !when(ctx)
	}
	op.mu.Lock()
	refuse := op.RefuseStaging
	op.mu.Unlock()
	op.mu.Lock()
	keyFromSecret, holdSnaps, holdHR := op.KeyFromSecret, op.HoldSnapshots, op.HoldHelmRelease
	op.mu.Unlock()
	if !holdSnaps {
		op.snapshots(ctx, failSnaps, stall, keyFromSecret)
	}
	op.stagingJobs(ctx, refuse)
	op.controlPlanes(ctx)
	op.cluster(ctx, hold, failBoot)
	if !holdHR {
		op.helmRelease(ctx)
	}
}

// snapshots completes (or fails) the snapshots nobody has started: a
// snapshot a test marks Started itself is left running.
func (op *Operator) snapshots(ctx context.Context, fail, stall, keyFromSecret bool) {
	var snaps etcdv1alpha2.EtcdSnapshotList
	if op.c.List(ctx, &snaps, client.InNamespace(op.ns)) != nil {
		return
	}
	for i := range snaps.Items {
		s := &snaps.Items[i]
		if s.Status.Phase != "" || s.Spec.Destination.S3 == nil {
			continue
		}
		if stall {
			s.Status.Phase = etcdv1alpha2.SnapshotPhaseStarted
			_ = op.c.Status().Update(ctx, s)
			continue
		}
		if fail {
			s.Status.Phase = etcdv1alpha2.SnapshotPhaseFailed
			s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "JobFailed",
				Message: "snapshot job failed", LastTransitionTime: metav1.Now()}}
			_ = op.c.Status().Update(ctx, s)
			continue
		}
		dest := s.Spec.Destination.S3
		key := artifact.ObjectKey(dest.Key, s.Name)
		data := Snapshot(4, s.Name)
		store := op.s3
		if keyFromSecret {
			if store = op.agentClient(ctx, dest); store == nil {
				continue
			}
		}
		if _, err := store.PutObject(ctx, dest.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			continue
		}
		s.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
		s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: artifact.URI(dest.Bucket, key), SizeBytes: int64(len(data)), Checksum: Checksum(data)}
		s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "SnapshotStored",
			Message: "stored", LastTransitionTime: metav1.Now()}}
		_ = op.c.Status().Update(ctx, s)
	}
}

// agentClient is the S3 client a snapshot agent starts with: the
// destination's endpoint and the two variables of the Secret it names.
func (op *Operator) agentClient(ctx context.Context, dest *etcdv1alpha2.S3Destination) *minio.Client {
	var secret corev1.Secret
	if op.c.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: dest.CredentialsSecretRef.Name}, &secret) != nil {
		return nil
	}
	op.mu.Lock()
	ca := op.S3CA
	op.mu.Unlock()
	c, err := S3ClientWithCA(dest.Endpoint, string(secret.Data["AWS_ACCESS_KEY_ID"]), string(secret.Data["AWS_SECRET_ACCESS_KEY"]), ca)
	if err != nil {
		return nil
	}
	return c
}

// HeldPVCAnnotation marks a member PVC a test holds: the operator does
// not delete it with its cluster, so it keeps a restore waiting for the
// purge for as long as the test needs; once the test deletes it, the
// operator clears its finalizers (the API server's pvc-protection among
// them) as it does for every member PVC.
const HeldPVCAnnotation = "test.etcd-backup-driver.io/held"

func (op *Operator) cluster(ctx context.Context, hold bool, failBoot func(string) bool) {
	c := &etcdv1alpha2.EtcdCluster{}
	err := op.c.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: "etcd"}, c)
	switch {
	case apierrors.IsNotFound(err):
		// The member PVCs only: the operator owns nothing else.
		var pvcs corev1.PersistentVolumeClaimList
		if op.c.List(ctx, &pvcs, client.InNamespace(op.ns), client.MatchingLabels{"app.kubernetes.io/instance": "etcd"}) == nil {
			for i := range pvcs.Items {
				p := &pvcs.Items[i]
				if p.Annotations[HeldPVCAnnotation] != "" && p.DeletionTimestamp == nil {
					continue
				}
				if len(p.Finalizers) > 0 {
					p.Finalizers = nil
					_ = op.c.Update(ctx, p)
				}
				_ = op.c.Delete(ctx, p)
			}
		}
	case err != nil, c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil, hold,
		meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable) != nil:
		return
	case failBoot != nil && failBoot(op.bootstrapKey(ctx, c)):
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ClusterConditionAvailable,
			Status: metav1.ConditionFalse, Reason: etcdv1alpha2.ReasonBootstrapFailed, Message: "seed restore failed: not an etcd snapshot"})
		_ = op.c.Status().Update(ctx, c)
	default:
		_ = MarkHealthy(ctx, op.c, client.ObjectKeyFromObject(c))
	}
}

func (op *Operator) helmRelease(ctx context.Context) {
	var list helmv2.HelmReleaseList
	if op.c.List(ctx, &list, client.InNamespace(op.ns)) != nil {
		return
	}
	for i := range list.Items {
		hr := &list.Items[i]
		if hr.Spec.Suspend {
			continue
		}
		ready := meta.FindStatusCondition(hr.Status.Conditions, "Ready")
		if ready == nil || ready.ObservedGeneration < hr.Generation {
			meta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
				Reason: "UpgradeSucceeded", Message: "release reconciled", ObservedGeneration: hr.Generation})
			_ = op.c.Status().Update(ctx, hr)
		}
	}
}

// MarkHealthy plays the operator reporting every member of a cluster ready.
func MarkHealthy(ctx context.Context, c client.Client, key client.ObjectKey) error {
	cl := &etcdv1alpha2.EtcdCluster{}
	if err := c.Get(ctx, key, cl); err != nil {
		return err
	}
	replicas := int32(1)
	if cl.Spec.Replicas != nil {
		replicas = *cl.Spec.Replicas
	}
	cl.Status.ReadyMembers = replicas
	cl.Status.ClusterID = "c1"
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ClusterConditionAvailable,
		Status: metav1.ConditionTrue, Reason: etcdv1alpha2.ReasonQuorumHealthy, Message: "all members healthy"})
	return c.Status().Update(ctx, cl)
}

// Snapshot is an etcd-shaped snapshot of pages 4 KiB pages (content derived
// from seed) followed by the sha256 of those pages, as etcd's Maintenance
// API streams it: it passes the driver's integrity check.
func Snapshot(pages int, seed string) []byte {
	db := make([]byte, pages*4096)
	h := sha256.Sum256([]byte(seed))
	for i := range db {
		db[i] = h[i%len(h)] ^ byte(i/251)
	}
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

// Checksum is data's checksum as a Backup records it.
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// S3Client is a path-style client of an S3 server for tests.
func S3Client(endpoint, accessKey, secretKey string) (*minio.Client, error) {
	return S3ClientWithCA(endpoint, accessKey, secretKey, nil)
}

// S3ClientWithCA is S3Client trusting ca alone for an https endpoint; nil
// means the system's roots.
func S3ClientWithCA(endpoint, accessKey, secretKey string, ca *s3ca.CA) (*minio.Client, error) {
	loc := objstore.Location{Endpoint: endpoint, ForcePathStyle: true}
	if ca != nil {
		loc.RootCAs = ca.Pool
	}
	return objstore.New(loc, accessKey, secretKey)
}
