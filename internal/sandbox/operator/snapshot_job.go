package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// uidMetadata is the object user-metadata the agent stamps with the
// snapshot's UID; an existing object is overwritten only by its own snapshot.
const uidMetadata = "etcd-snapshot-uid"

// jobTimeout is the snapshot Job's activeDeadlineSeconds.
const jobTimeout = 30 * time.Minute

// SnapshotStats is how long a snapshot job took and how much it moved.
type SnapshotStats struct {
	Bytes    int64
	Duration time.Duration
}

type jobResult struct {
	artifact etcdv1alpha2.SnapshotArtifact
	stats    SnapshotStats
	err      error
}

// snapshotJobs are the in-flight and finished jobs, by snapshot UID. A nil
// result means running.
type snapshotJobs struct {
	mu      sync.Mutex
	results map[string]*jobResult
	done    chan snapshotDone
}

func newSnapshotJobs() *snapshotJobs {
	return &snapshotJobs{results: map[string]*jobResult{}, done: make(chan snapshotDone, 64)}
}

// start runs fn once per snapshot UID, like the Job of a deterministic name.
func (j *snapshotJobs) start(s *etcdv1alpha2.EtcdSnapshot, fn func(context.Context) jobResult) {
	uid := string(s.UID)
	j.mu.Lock()
	if _, ok := j.results[uid]; ok {
		j.mu.Unlock()
		return
	}
	j.results[uid] = nil
	j.mu.Unlock()
	obj := s.DeepCopy()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
		defer cancel()
		res := fn(ctx)
		j.mu.Lock()
		j.results[uid] = &res
		j.mu.Unlock()
		j.done <- snapshotDone{Object: obj}
	}()
}

func (j *snapshotJobs) result(uid string) (*jobResult, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	res, ok := j.results[uid]
	return res, ok
}

// job is the snapshot agent: stream Maintenance.Snapshot of the cluster to
// S3 at the operator's key, hashing on the way.
func (r *SnapshotReconciler) job(s *etcdv1alpha2.EtcdSnapshot) func(context.Context) jobResult {
	snap := s.DeepCopy()
	return func(ctx context.Context) jobResult {
		started := time.Now()
		art, n, err := r.upload(ctx, snap)
		d := time.Since(started)
		log := logf.Log.WithName("sandbox-snapshot-agent").WithValues("snapshot", snap.Namespace+"/"+snap.Name)
		if err != nil {
			log.Info("snapshot failed", "error", err.Error())
			return jobResult{err: err}
		}
		log.Info(fmt.Sprintf("snapshot uploaded: uri=%q size=%d sha256=%s", art.URI, art.SizeBytes, art.Checksum[len("sha256:"):]), "took", d.String())
		return jobResult{artifact: art, stats: SnapshotStats{Bytes: n, Duration: d}}
	}
}

func (r *SnapshotReconciler) upload(ctx context.Context, s *etcdv1alpha2.EtcdSnapshot) (etcdv1alpha2.SnapshotArtifact, int64, error) {
	dst := s.Spec.Destination.S3
	if dst == nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("only S3 destinations are supported by the sandbox")
	}
	// The kubelet refuses to start a Pod whose secretKeyRef is missing
	// (CreateContainerConfigError); the Job then never succeeds.
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: dst.CredentialsSecretRef.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("credentials Secret %s/%s not found: the snapshot Pod cannot start (CreateContainerConfigError)", s.Namespace, dst.CredentialsSecretRef.Name)
		}
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("read credentials Secret %s/%s: %w", s.Namespace, dst.CredentialsSecretRef.Name, err)
	}
	s3, err := objstore.FromSecret(objstore.Location{Endpoint: dst.Endpoint, Region: dst.Region, ForcePathStyle: dst.ForcePathStyle}, &secret)
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, err
	}
	eps := r.Fleet.Endpoints(client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name})
	if len(eps) == 0 {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("no etcd member of %s/%s is reachable", s.Namespace, s.Spec.ClusterRef.Name)
	}
	key := artifact.ObjectKey(dst.Key, s.Name)
	if info, err := s3.StatObject(ctx, dst.Bucket, key, minio.StatObjectOptions{}); err == nil {
		if info.UserMetadata["Etcd-Snapshot-Uid"] != string(s.UID) {
			return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("object s3://%s/%s already exists and belongs to another snapshot; refusing to overwrite", dst.Bucket, key)
		}
	} else if minio.ToErrorResponse(err).StatusCode != 404 {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("check s3://%s/%s: %w", dst.Bucket, key, err)
	}

	cli, err := clientFor(eps...)
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, err
	}
	defer cli.Close()
	stream, err := cli.Snapshot(ctx)
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("start snapshot stream: %w", err)
	}
	defer stream.Close()
	h := sha256.New()
	counted := &countingReader{r: io.TeeReader(stream, h)}
	_, err = s3.PutObject(ctx, dst.Bucket, key, counted, -1, minio.PutObjectOptions{
		PartSize:     objstore.PartSize,
		UserMetadata: map[string]string{uidMetadata: string(s.UID)},
	})
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("upload s3://%s/%s: %w", dst.Bucket, key, err)
	}
	return etcdv1alpha2.SnapshotArtifact{
		URI:       artifact.URI(dst.Bucket, key),
		SizeBytes: counted.n,
		Checksum:  "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}, counted.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
