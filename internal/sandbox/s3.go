package sandbox

import (
	"crypto/x509"
	"fmt"
	"path/filepath"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// startS3 starts the S3 server kind with buckets under Dir.
func (s *Sandbox) startS3(kind S3Server, buckets []string) (err error) {
	switch kind {
	case "", S3Embedded:
		if s.S3CA != nil {
			s.S3, err = s3server.StartTLS(filepath.Join(s.Dir, "s3"), s.S3Credentials, s.S3CA.Serving, buckets...)
		} else {
			s.S3, err = s3server.Start(filepath.Join(s.Dir, "s3"), s.S3Credentials, buckets...)
		}
		if err != nil {
			return err
		}
		s.S3URL, s.PlatformCredentials = s.S3.URL, s.S3Credentials
	case S3MinIO:
		if s.MinIO, err = testenv.StartMinIOWith(testenv.MinIOOptions{Dir: filepath.Join(s.Dir, "minio"),
			RootUser: s.S3Credentials.AccessKeyID, RootPassword: s.S3Credentials.SecretAccessKey, Buckets: buckets, CA: s.S3CA}); err != nil {
			return err
		}
		s.S3URL = s.MinIO.Endpoint
		id, secret, err := s.MinIO.AddPlatformUser("etcd-backup-platform", DefaultBucket)
		if err != nil {
			return err
		}
		s.PlatformCredentials = s3server.Credentials{AccessKeyID: id, SecretAccessKey: secret}
		return nil
	default:
		return fmt.Errorf("sandbox: unknown S3 server %q (%s or %s)", kind, S3Embedded, S3MinIO)
	}
	return nil
}

// s3RootCAs are the roots the stand-ins verify S3 with: the sandbox's CA
// alone, or nil (the system's) with plain http.
func (s *Sandbox) s3RootCAs() *x509.CertPool {
	if s.S3CA == nil {
		return nil
	}
	return s.S3CA.Pool
}

// S3Client is a path-style client of the sandbox's S3 signed with the
// given keys, trusting its CA alone (over https).
func (s *Sandbox) S3Client(accessKey, secretKey string) (*minio.Client, error) {
	return objstore.New(objstore.Location{Endpoint: s.S3URL, ForcePathStyle: true, RootCAs: s.s3RootCAs()}, accessKey, secretKey)
}
