package operator

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// uidMetadata is the object user-metadata the agent stamps with the
// snapshot's UID; an existing object is overwritten only by its own snapshot.
const uidMetadata = "etcd-snapshot-uid"

// agentTimeout bounds one agent run (the Job's deadline bounds the rest).
const agentTimeout = 30 * time.Minute

// snapshotAgent is the operator's snapshot agent (internal/agent/snapshot.go
// upstream), configured by its environment only: it streams
// Maintenance.Snapshot of the cluster behind ETCD_ENDPOINTS to
// S3_BUCKET at <S3_KEY><SNAPSHOT_NAME>.db, hashing on the way, and refuses
// to overwrite an object another snapshot wrote.
type snapshotAgent struct {
	fleet     *Fleet
	namespace string
	env       map[string]string
	// rootCAs verify an https S3 endpoint; nil means the system's roots.
	rootCAs *x509.CertPool
}

func (a snapshotAgent) run(ctx context.Context) (etcdv1alpha2.SnapshotArtifact, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, agentTimeout)
	defer cancel()
	if kind := a.env[envDestKind]; kind != "s3" {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("destination kind %q is not supported by the sandbox (only s3)", kind)
	}
	eps, err := a.endpoints()
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, err
	}
	s3, err := objstore.New(objstore.Location{Endpoint: a.env[envS3Endpoint], Region: a.env[envS3Region], ForcePathStyle: a.env[envS3PathStyle] == "true", RootCAs: a.rootCAs},
		a.env[envAccessKeyID], a.env[envSecretAccesKey])
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, err
	}
	bucket, key, uid := a.env[envS3Bucket], objectKey(a.env[envS3Key], a.env[envSnapshotName]), a.env[envSnapshotUID]
	if info, err := s3.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); err == nil {
		if info.UserMetadata["Etcd-Snapshot-Uid"] != uid {
			return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("snapshot object s3://%s/%s already exists and was not written by this snapshot; refusing to overwrite", bucket, key)
		}
	} else if minio.ToErrorResponse(err).StatusCode != 404 {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("check s3://%s/%s: %w", bucket, key, err)
	}

	cli, err := etcdproc.Client(eps...)
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
	_, err = s3.PutObject(ctx, bucket, key, counted, -1, minio.PutObjectOptions{
		PartSize:     objstore.PartSize,
		UserMetadata: map[string]string{uidMetadata: uid},
	})
	if err != nil {
		return etcdv1alpha2.SnapshotArtifact{}, 0, fmt.Errorf("upload s3://%s/%s: %w", bucket, key, err)
	}
	return etcdv1alpha2.SnapshotArtifact{
		URI:       "s3://" + bucket + "/" + key,
		SizeBytes: counted.n,
		Checksum:  "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}, counted.n, nil
}

// endpoints resolves ETCD_ENDPOINTS (the cluster's client Service,
// <cluster>-client.<namespace>.svc:2379) to the live members, as cluster DNS
// would.
func (a snapshotAgent) endpoints() ([]string, error) {
	u, err := url.Parse(a.env[envEndpoints])
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", envEndpoints, a.env[envEndpoints], err)
	}
	svc, ns, ok := strings.Cut(strings.TrimSuffix(u.Hostname(), ".svc"), ".")
	cluster, isClient := strings.CutSuffix(svc, "-client")
	if !ok || !isClient || ns != a.namespace {
		return nil, fmt.Errorf("%s %q is not a client Service of namespace %s", envEndpoints, a.env[envEndpoints], a.namespace)
	}
	eps := a.fleet.Endpoints(types.NamespacedName{Namespace: ns, Name: cluster})
	if len(eps) == 0 {
		return nil, fmt.Errorf("dial %s: no etcd member of %s/%s is running", u.Host, ns, cluster)
	}
	return eps, nil
}

// objectKey is the agent's key rule: S3_KEY is a prefix, joined to
// <name>.db with a slash unless it ends in one; empty means <name>.db.
func objectKey(prefix, name string) string {
	file := name + ".db"
	switch {
	case prefix == "":
		return file
	case strings.HasSuffix(prefix, "/"):
		return prefix + file
	default:
		return prefix + "/" + file
	}
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
