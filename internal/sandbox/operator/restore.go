package operator

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/minio/minio-go/v7"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// seedRestore is the operator's restore agent for the seed member: download
// the exact object key with the named Secret's credentials, then restore it
// with etcdutl into dataDir. Like the agent it is a no-op when dataDir already
// holds a member, and it skips etcdutl's hash check.
type seedRestore struct {
	reader  client.Reader
	ns      string
	src     *etcdv1alpha2.S3Source
	dataDir string
	name    string
	peerURL string
	token   string
}

func (r seedRestore) run(ctx context.Context) (err error) {
	// etcdutl panics on a file that is not a bolt database; the real
	// agent's process would exit non-zero, so this is a failed restore.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("etcdutl snapshot restore failed: %v", p)
		}
	}()
	if _, err := os.Stat(filepath.Join(r.dataDir, "member")); err == nil {
		return nil
	}
	if r.src.Key == "" {
		return fmt.Errorf("restore source has an empty object key")
	}
	var secret corev1.Secret
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.src.CredentialsSecretRef.Name}, &secret); err != nil {
		return fmt.Errorf("read credentials Secret %s/%s: %w", r.ns, r.src.CredentialsSecretRef.Name, err)
	}
	s3, err := objstore.FromSecret(objstore.Location{Endpoint: r.src.Endpoint, Region: r.src.Region, ForcePathStyle: r.src.ForcePathStyle}, &secret)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.dataDir), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.dataDir), "etcd-restore-*.db")
	if err != nil {
		return fmt.Errorf("create download file: %w", err)
	}
	defer os.Remove(tmp.Name())
	obj, err := s3.GetObject(ctx, r.src.Bucket, r.src.Key, minio.GetObjectOptions{})
	if err != nil {
		tmp.Close()
		return fmt.Errorf("download s3://%s/%s: %w", r.src.Bucket, r.src.Key, err)
	}
	_, err = io.Copy(tmp, obj)
	obj.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download s3://%s/%s: %w", r.src.Bucket, r.src.Key, err)
	}
	// etcdutl refuses an existing output folder: restore beside it and
	// move member/ into place, as the agent does.
	staging := r.dataDir + ".restore"
	_ = os.RemoveAll(staging)
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        tmp.Name(),
		Name:                r.name,
		OutputDataDir:       staging,
		PeerURLs:            []string{r.peerURL},
		InitialCluster:      r.name + "=" + r.peerURL,
		InitialClusterToken: r.token,
		SkipHashCheck:       true,
	})
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore of s3://%s/%s: %w", r.src.Bucket, r.src.Key, err)
	}
	if err := os.MkdirAll(r.dataDir, 0o700); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(staging, "member"), filepath.Join(r.dataDir, "member")); err != nil {
		return fmt.Errorf("move restored member into place: %w", err)
	}
	return os.RemoveAll(staging)
}
