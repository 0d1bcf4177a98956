// Package objstore opens S3 clients the way the etcd-operator's agents do:
// from an endpoint URL (scheme included), a region defaulting to us-east-1, a
// path-style switch and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY pair of
// a credentials Secret.
package objstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
)

// Secret data keys the operator's agents read credentials from.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// PartSize is the multipart chunk used when streaming an object of unknown
// length; it bounds the memory an upload holds.
const PartSize = 16 << 20

// Location is where an S3 client connects.
type Location struct {
	Endpoint       string
	Region         string
	ForcePathStyle bool
	// RootCAs verify an https endpoint; nil means the system's roots.
	RootCAs *x509.CertPool
}

// New returns a client for loc signed with accessKey/secretKey.
func New(loc Location, accessKey, secretKey string) (*minio.Client, error) {
	u, err := url.Parse(loc.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("S3 endpoint %q is not an http(s) URL", loc.Endpoint)
	}
	region := loc.Region
	if region == "" {
		region = "us-east-1"
	}
	lookup := minio.BucketLookupDNS
	if loc.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(accessKey, secretKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
	}
	if loc.RootCAs != nil {
		t, err := minio.DefaultTransport(opts.Secure)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = &tls.Config{RootCAs: loc.RootCAs, MinVersion: tls.VersionTLS12}
		opts.Transport = t
	}
	c, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", loc.Endpoint, err)
	}
	return c, nil
}

// FromSecret returns a client for loc with the credentials in s. It fails,
// naming the Secret and the missing key but never a value, when a key is
// absent or empty.
func FromSecret(loc Location, s *corev1.Secret) (*minio.Client, error) {
	for _, k := range []string{AccessKeyIDKey, SecretAccessKeyKey} {
		if len(s.Data[k]) == 0 {
			return nil, fmt.Errorf("secret %s/%s has no %s", s.Namespace, s.Name, k)
		}
	}
	return New(loc, string(s.Data[AccessKeyIDKey]), string(s.Data[SecretAccessKeyKey]))
}
