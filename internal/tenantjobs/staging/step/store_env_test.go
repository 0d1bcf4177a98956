package step_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Every step reaches an https S3 behind a private CA with the bundle the
// driver hands its Jobs (S3_CA_PEM), and only with it; a bundle without a
// certificate is a bad argument, not a network error.
func TestStepsTrustTheCABundleTheDriverHandsThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ca, err := s3ca.New()
	g.Expect(err).NotTo(HaveOccurred())
	creds := s3server.Credentials{AccessKeyID: "platform", SecretAccessKey: "platform-secret"}
	srv, err := s3server.StartTLS(t.TempDir(), creds, ca.Serving, "backups")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(srv.Stop(ctx)).To(Succeed()) }()
	put, err := objstore.New(objstore.Location{Endpoint: srv.URL, ForcePathStyle: true, RootCAs: ca.Pool}, creds.AccessKeyID, creds.SecretAccessKey)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = put.PutObject(ctx, "backups", "t/snap.db", bytes.NewReader([]byte("snapshot")), 8, minio.PutObjectOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	loc := s3object.Location{Endpoint: srv.URL, Bucket: "backups", Key: "t/snap.db", ForcePathStyle: true}
	stat := func(env map[string]string) (int64, error) {
		env[s3object.AccessKeyIDKey], env[s3object.SecretAccessKeyKey] = creds.AccessKeyID, creds.SecretAccessKey
		store, c, err := step.StoreFromEnv([]string{"127.0.0.0/8"}, false, func(k string) string { return env[k] })
		if err != nil {
			return 0, err
		}
		return store.Stat(ctx, loc, c)
	}
	size, err := stat(map[string]string{s3object.EnvCAPEM: string(ca.PEM)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size).To(Equal(int64(8)))

	_, err = stat(map[string]string{})
	g.Expect(err).To(MatchError(ContainSubstring("certificate")), "without the bundle the server is not trusted")

	_, err = stat(map[string]string{s3object.EnvCAPEM: "not a certificate"})
	g.Expect(err).To(MatchError(step.ErrArguments))
}
