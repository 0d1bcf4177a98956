package s3ca_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3ca"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
)

// An S3 server serving the CA's certificate is reached by a client that
// trusts the CA, and refused by one that trusts only the system's roots or
// another CA: the CA is what makes the endpoint trusted, not https alone.
func TestOnlyClientsTrustingTheCAReachItsServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ca, err := s3ca.New()
	g.Expect(err).NotTo(HaveOccurred())
	creds := s3server.Credentials{AccessKeyID: "sandbox", SecretAccessKey: "sandbox-secret"}
	srv, err := s3server.StartTLS(t.TempDir(), creds, ca.Serving, "backups")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(srv.Stop(ctx)).To(Succeed()) }()
	g.Expect(srv.URL).To(HavePrefix("https://127.0.0.1:"))

	put := func(roots *s3ca.CA) error {
		loc := objstore.Location{Endpoint: srv.URL, ForcePathStyle: true}
		if roots != nil {
			loc.RootCAs = roots.Pool
		}
		c, err := objstore.New(loc, creds.AccessKeyID, creds.SecretAccessKey)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = c.PutObject(ctx, "backups", "k", bytes.NewReader([]byte("v")), 1, minio.PutObjectOptions{})
		return err
	}
	g.Expect(put(ca)).To(Succeed())
	g.Expect(put(nil)).To(MatchError(ContainSubstring("certificate")))
	other, err := s3ca.New()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(put(other)).To(MatchError(ContainSubstring("certificate")))

	resp, err := ca.HTTPClient().Get(srv.URL + "/backups/k")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.Body.Close()).To(Succeed())
	g.Expect(resp.StatusCode).To(Equal(403), "reached, and refused unsigned")
}
