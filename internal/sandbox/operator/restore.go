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

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// restoreAgent is the operator's restore init container for the seed
// member (internal/agent/restore.go upstream): a no-op when the data folder
// already holds a member; otherwise it looks the exact object key up, checks
// the volume has room for twice the snapshot (the download plus the member
// etcdutl rebuilds from it), downloads it and restores it with etcdutl,
// skipping etcdutl's hash check. Nothing compares the Backup's checksum.
type restoreAgent struct {
	secret   *corev1.Secret
	src      *etcdv1alpha2.S3Source
	dataDir  string
	name     string
	peerURL  string
	token    string
	version  string
	capacity int64
}

func (a restoreAgent) run(ctx context.Context) (err error) {
	// etcdutl panics on a file that is not a bolt database; the real
	// agent's process would exit non-zero, so this is a failed restore.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("etcdutl snapshot restore failed: %v", p)
		}
	}()
	if _, err := os.Stat(filepath.Join(a.dataDir, "member")); err == nil {
		return nil
	}
	if !versionAtLeast(a.version, 3, 5) {
		return fmt.Errorf("etcd %s ships no etcdutl (3.5 or later is needed to restore)", a.version)
	}
	if a.src.Key == "" {
		return fmt.Errorf("restore source has an empty object key")
	}
	s3, err := objstore.FromSecret(objstore.Location{Endpoint: a.src.Endpoint, Region: a.src.Region, ForcePathStyle: a.src.ForcePathStyle}, a.secret)
	if err != nil {
		return err
	}
	info, err := s3.StatObject(ctx, a.src.Bucket, a.src.Key, minio.StatObjectOptions{})
	if err != nil {
		return fmt.Errorf("head s3://%s/%s: %w", a.src.Bucket, a.src.Key, err)
	}
	if need := 2 * info.Size; need > a.capacity {
		return fmt.Errorf("not enough free space on the member volume: restoring s3://%s/%s (%d bytes) needs %d bytes, the volume (spec.storage.size) has %d",
			a.src.Bucket, a.src.Key, info.Size, need, a.capacity)
	}
	if err := os.MkdirAll(filepath.Dir(a.dataDir), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.dataDir), "etcd-restore-*.db")
	if err != nil {
		return fmt.Errorf("create download file: %w", err)
	}
	defer os.Remove(tmp.Name())
	obj, err := s3.GetObject(ctx, a.src.Bucket, a.src.Key, minio.GetObjectOptions{})
	if err != nil {
		tmp.Close()
		return fmt.Errorf("download s3://%s/%s: %w", a.src.Bucket, a.src.Key, err)
	}
	_, err = io.Copy(tmp, obj)
	obj.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download s3://%s/%s: %w", a.src.Bucket, a.src.Key, err)
	}
	// etcdutl refuses an existing output folder: restore beside it and move
	// member/ into place.
	staging := a.dataDir + ".restore"
	_ = os.RemoveAll(staging)
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        tmp.Name(),
		Name:                a.name,
		OutputDataDir:       staging,
		PeerURLs:            []string{a.peerURL},
		InitialCluster:      a.name + "=" + a.peerURL,
		InitialClusterToken: a.token,
		SkipHashCheck:       true,
	})
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore of s3://%s/%s: %w", a.src.Bucket, a.src.Key, err)
	}
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(staging, "member"), filepath.Join(a.dataDir, "member")); err != nil {
		return fmt.Errorf("move restored member into place: %w", err)
	}
	return os.RemoveAll(staging)
}
