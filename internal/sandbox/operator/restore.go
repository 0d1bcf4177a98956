package operator

import (
	"context"
	"crypto/x509"
	"encoding/binary"
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
// already holds a member; otherwise it looks the snapshot up (the exact S3
// object key, or the file subPath on the source claim, which upstream
// mounts read-only at /restore/src), checks the volume has room for twice
// the snapshot, fetches it and restores it with etcdutl, skipping etcdutl's
// hash check. Nothing compares the Backup's checksum.
type restoreAgent struct {
	src      snapshotSource
	dataDir  string
	name     string
	peerURL  string
	token    string
	version  string
	capacity int64
}

// snapshotSource is where the restore reads the snapshot from.
type snapshotSource interface {
	// String names the snapshot in messages.
	String() string
	// size is the snapshot's size in bytes.
	size(ctx context.Context) (int64, error)
	// fetch makes the snapshot a local file (a download into dir, or the
	// file itself); done removes what fetch created.
	fetch(ctx context.Context, dir string) (path string, done func(), err error)
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
	size, err := a.src.size(ctx)
	if err != nil {
		return err
	}
	if need := 2 * size; need > a.capacity {
		return fmt.Errorf("not enough free space on the member volume: restoring %s (%d bytes) needs %d bytes, the volume (spec.storage.size) has %d",
			a.src, size, need, a.capacity)
	}
	if err := os.MkdirAll(filepath.Dir(a.dataDir), 0o700); err != nil {
		return err
	}
	file, done, err := a.src.fetch(ctx, filepath.Dir(a.dataDir))
	if err != nil {
		return err
	}
	defer done()
	// etcdutl refuses an existing output folder: restore beside it and move
	// member/ into place.
	staging := a.dataDir + ".restore"
	_ = os.RemoveAll(staging)
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        file,
		Name:                a.name,
		OutputDataDir:       staging,
		PeerURLs:            []string{a.peerURL},
		InitialCluster:      a.name + "=" + a.peerURL,
		InitialClusterToken: a.token,
		SkipHashCheck:       true,
	})
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore of %s: %w", a.src, err)
	}
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(staging, "member"), filepath.Join(a.dataDir, "member")); err != nil {
		return fmt.Errorf("move restored member into place: %w", err)
	}
	return os.RemoveAll(staging)
}

// s3Snapshot is source.s3: one exact object key, downloaded.
type s3Snapshot struct {
	secret  *corev1.Secret
	src     *etcdv1alpha2.S3Source
	rootCAs *x509.CertPool
}

func (s s3Snapshot) String() string { return fmt.Sprintf("s3://%s/%s", s.src.Bucket, s.src.Key) }

func (s s3Snapshot) client() (*minio.Client, error) {
	return objstore.FromSecret(objstore.Location{Endpoint: s.src.Endpoint, Region: s.src.Region, ForcePathStyle: s.src.ForcePathStyle, RootCAs: s.rootCAs}, s.secret)
}

func (s s3Snapshot) size(ctx context.Context) (int64, error) {
	if s.src.Key == "" {
		return 0, fmt.Errorf("restore source has an empty object key")
	}
	c, err := s.client()
	if err != nil {
		return 0, err
	}
	info, err := c.StatObject(ctx, s.src.Bucket, s.src.Key, minio.StatObjectOptions{})
	if err != nil {
		return 0, fmt.Errorf("head %s: %w", s, err)
	}
	return info.Size, nil
}

func (s s3Snapshot) fetch(ctx context.Context, dir string) (string, func(), error) {
	c, err := s.client()
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp(dir, "etcd-restore-*.db")
	if err != nil {
		return "", nil, fmt.Errorf("create download file: %w", err)
	}
	done := func() { _ = os.Remove(tmp.Name()) }
	obj, err := c.GetObject(ctx, s.src.Bucket, s.src.Key, minio.GetObjectOptions{})
	if err != nil {
		tmp.Close()
		done()
		return "", nil, fmt.Errorf("download %s: %w", s, err)
	}
	_, err = io.Copy(tmp, obj)
	obj.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		done()
		return "", nil, fmt.Errorf("download %s: %w", s, err)
	}
	return tmp.Name(), done, nil
}

// claimSnapshot is source.pvc: the file subPath on the claim, read where
// it lies (upstream mounts the claim read-only at /restore/src and
// restores Join(/restore/src, subPath)).
type claimSnapshot struct {
	src  *etcdv1alpha2.PVCSource
	path string
}

func (s claimSnapshot) String() string {
	return fmt.Sprintf("pvc://%s/%s", s.src.ClaimName, s.src.SubPath)
}

func (s claimSnapshot) size(context.Context) (int64, error) {
	info, err := os.Stat(s.path)
	if os.IsNotExist(err) {
		return 0, fmt.Errorf("%s: no such file on the claim", s)
	}
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", s, err)
	}
	if !info.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a file (subPath must name the snapshot file)", s)
	}
	return info.Size(), nil
}

func (s claimSnapshot) fetch(context.Context, string) (string, func(), error) {
	if err := checkBoltLayout(s.path); err != nil {
		return "", nil, fmt.Errorf("%s: %w", s, err)
	}
	return s.path, func() {}, nil
}

// bolt file layout: offsets in a meta page (pages 0 and 1).
const (
	boltMagic          = 0xED0CDAED
	boltMagicOffset    = 16
	boltPageSizeOffset = 24
	boltHighWaterMark  = 56 // pgid: the pages the database spans
	boltTxIDOffset     = 64
	// hashTrailer is the sha256 etcd appends to a snapshot stream; a
	// snapshot carries it when its size is 32 more than a multiple of 512.
	hashTrailer = 32
)

// checkBoltLayout refuses a file that is not a whole bolt database (a
// snapshot file still being written, or not a snapshot at all): its
// newest meta page says how many pages it spans. etcdutl fails on such a
// file too, but bbolt may panic on it in a goroutine of its own, which no
// recover catches: the real init container crashes, the sandbox's process
// must not.
func checkBoltLayout(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	head := make([]byte, boltTxIDOffset+8)
	if _, err := io.ReadFull(f, head); err != nil || binary.LittleEndian.Uint32(head[boltMagicOffset:]) != boltMagic {
		return fmt.Errorf("not an etcd snapshot (no bolt database header)")
	}
	page := int64(binary.LittleEndian.Uint32(head[boltPageSizeOffset:]))
	if page < 512 {
		return fmt.Errorf("not an etcd snapshot (bolt page size %d)", page)
	}
	meta := head
	other := make([]byte, len(head))
	if _, err := f.ReadAt(other, page); err == nil && binary.LittleEndian.Uint32(other[boltMagicOffset:]) == boltMagic &&
		binary.LittleEndian.Uint64(other[boltTxIDOffset:]) > binary.LittleEndian.Uint64(head[boltTxIDOffset:]) {
		meta = other
	}
	size := info.Size()
	if size%512 == hashTrailer {
		size -= hashTrailer
	}
	if need := int64(binary.LittleEndian.Uint64(meta[boltHighWaterMark:])) * page; size < need {
		return fmt.Errorf("not a whole bolt database (%d bytes of the %d its meta page spans): a torn or truncated snapshot", size, need)
	}
	return nil
}
