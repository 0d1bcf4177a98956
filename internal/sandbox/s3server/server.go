// Package s3server is the sandbox's S3 endpoint: gofakes3 (a real S3 protocol
// implementation) storing buckets as files under a folder, behind a check of
// AWS Signature Version 4 so that only holders of the configured credentials
// get in. Snapshots written here survive a sandbox restart when the folder
// is kept.
package s3server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

// Credentials are one S3 access key pair.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// Server is a running S3 endpoint.
type Server struct {
	// URL is the endpoint, for example http://127.0.0.1:40123.
	URL string

	backend *s3afero.MultiBucketBackend
	http    *http.Server
	done    chan struct{}
}

// Start serves S3 on a free loopback port with data under dir. Only requests
// signed with creds are accepted; buckets are created up front.
func Start(dir string, creds Credentials, buckets ...string) (*Server, error) {
	return start(dir, creds, nil, buckets)
}

// StartTLS is Start over https with cert.
func StartTLS(dir string, creds Credentials, cert tls.Certificate, buckets ...string) (*Server, error) {
	return start(dir, creds, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, buckets)
}

func start(dir string, creds Credentials, tlsConfig *tls.Config, buckets []string) (*Server, error) {
	for _, sub := range []string{"buckets", "metadata", "uploads"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("s3server: create %s: %w", sub, err)
		}
	}
	osFs := afero.NewOsFs()
	backend, err := s3afero.MultiBucket(
		afero.NewBasePathFs(osFs, filepath.Join(dir, "buckets")),
		s3afero.MultiWithMetaFs(afero.NewBasePathFs(osFs, filepath.Join(dir, "metadata"))),
	)
	if err != nil {
		return nil, fmt.Errorf("s3server: backend: %w", err)
	}
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists) {
			return nil, fmt.Errorf("s3server: create bucket %s: %w", b, err)
		}
	}
	faker := gofakes3.New(backend, gofakes3.WithoutVersioning(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3server: listen: %w", err)
	}
	scheme := "http"
	if tlsConfig != nil {
		l, scheme = tls.NewListener(l, tlsConfig), "https"
	}
	s := &Server{
		URL:     scheme + "://" + l.Addr().String(),
		backend: backend,
		http:    &http.Server{Handler: requireSignature(creds, atomicWrites(filepath.Join(dir, "uploads"), faker.Server())), ReadHeaderTimeout: 10 * time.Second},
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(l)
	}()
	return s, nil
}

// CreateBucket adds a bucket (idempotent).
func (s *Server) CreateBucket(name string) error {
	ok, err := s.backend.BucketExists(name)
	if err != nil || ok {
		return err
	}
	return s.backend.CreateBucket(name)
}

// Stop closes the listener and waits for in-flight requests.
func (s *Server) Stop(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	<-s.done
	return err
}
