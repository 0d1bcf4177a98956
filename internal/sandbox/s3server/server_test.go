package s3server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
)

func TestSignedClientsStoreAndReadObjectsOthersAreRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	creds := s3server.Credentials{AccessKeyID: "sandbox", SecretAccessKey: "sandbox-secret"}
	srv, err := s3server.Start(dir, creds, "backups")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(srv.Stop(ctx)).To(Succeed()) }()

	loc := objstore.Location{Endpoint: srv.URL, ForcePathStyle: true}
	c, err := objstore.New(loc, creds.AccessKeyID, creds.SecretAccessKey)
	g.Expect(err).NotTo(HaveOccurred())

	// An upload of unknown length (as a snapshot stream is) spanning
	// several parts, under a key with characters that need encoding.
	data := make([]byte, 2*objstore.PartSize+12345)
	_, _ = rand.Read(data)
	key := "tenant a/etcd/snap+1.db"
	_, err = c.PutObject(ctx, "backups", key, bytes.NewReader(data), -1, minio.PutObjectOptions{
		PartSize: objstore.PartSize, UserMetadata: map[string]string{"etcd-snapshot-uid": "u1"}})
	g.Expect(err).NotTo(HaveOccurred())

	obj, err := c.GetObject(ctx, "backups", key, minio.GetObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	got, err := io.ReadAll(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(got)).To(Equal(len(data)))
	g.Expect(bytes.Equal(got, data)).To(BeTrue())
	info, err := c.StatObject(ctx, "backups", key, minio.StatObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.UserMetadata).To(HaveKeyWithValue("Etcd-Snapshot-Uid", "u1"))

	wrongSecret, err := objstore.New(loc, creds.AccessKeyID, "guess")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wrongSecret.GetObjectACL(ctx, "backups", key)
	g.Expect(minio.ToErrorResponse(err).Code).To(Equal("SignatureDoesNotMatch"))
	_, err = wrongSecret.StatObject(ctx, "backups", key, minio.StatObjectOptions{})
	g.Expect(minio.ToErrorResponse(err).StatusCode).To(Equal(403))

	wrongKey, err := objstore.New(loc, "someone", creds.SecretAccessKey)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wrongKey.PutObject(ctx, "backups", "x", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{})
	g.Expect(minio.ToErrorResponse(err).Code).To(Equal("InvalidAccessKeyId"))
}
