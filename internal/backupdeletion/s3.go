package backupdeletion

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// defaultRegion is the region the etcd-operator's agent uses when none is
// recorded; signing with the same one reaches the same bucket.
const defaultRegion = "us-east-1"

// s3Timeout bounds one delete call, so a hung endpoint becomes a retried
// error instead of a stuck worker.
const s3Timeout = time.Minute

// Credentials are S3 access keys. They are never logged or recorded.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// ObjectDeleter deletes one stored snapshot. Deleting an object that does
// not exist succeeds.
type ObjectDeleter interface {
	DeleteObject(ctx context.Context, src artifact.Source, creds Credentials) error
}

// S3Deleter deletes objects with the S3 protocol.
type S3Deleter struct{}

// DeleteObject removes src's exact object key from its bucket, addressing
// the bucket the way the snapshot agent did (path style only when the
// Backup records forcePathStyle=true).
func (S3Deleter) DeleteObject(ctx context.Context, src artifact.Source, creds Credentials) error {
	u, err := url.Parse(src.Endpoint)
	if err != nil {
		return fmt.Errorf("parse endpoint: %w", err)
	}
	region := src.Region
	if region == "" {
		region = defaultRegion
	}
	lookup := minio.BucketLookupDNS
	if src.ForcePathStyle != nil && *src.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
	})
	if err != nil {
		return fmt.Errorf("S3 client for %s: %w", src.Endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	err = mc.RemoveObject(ctx, src.Bucket, src.Key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return fmt.Errorf("delete object: %w", err)
	}
	return nil
}

// validateEndpoint accepts an http(s) URL naming only a host (and port).
func validateEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("recorded S3 endpoint %q is not a URL: %w", endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("recorded S3 endpoint %q is not an http:// or https:// URL with a host", endpoint)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("recorded S3 endpoint %q must name only a scheme, host and port", endpoint)
	}
	return nil
}
