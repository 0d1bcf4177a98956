package s3object

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

// defaultRegion is the region the etcd-operator's agent uses when none is
// recorded; signing with the same one reaches the same bucket.
const defaultRegion = "us-east-1"

// Errors a caller may act on; other errors are transient.
var (
	// ErrNotFound: no such object.
	ErrNotFound = errors.New("S3 object not found")
	// ErrNoSuchBucket: no such bucket (or the endpoint or region is wrong).
	ErrNoSuchBucket = errors.New("S3 bucket not found")
	// ErrAccessDenied: S3 refused the credentials for this object.
	ErrAccessDenied = errors.New("S3 refused the credentials")
	// ErrRefused: the endpoint breaks the endpoint policy; nothing was sent.
	ErrRefused = errors.New("endpoint refused by policy")
)

// Location is one exact object.
type Location struct {
	Endpoint       string
	Bucket         string
	Key            string
	Region         string
	ForcePathStyle bool
}

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Key }

// Store reaches objects through the endpoint policy.
type Store struct {
	// Policy decides which endpoints may be dialled.
	Policy endpointpolicy.Policy
	// AllowHTTP lets plain-http endpoints through the URL check. Callers
	// set it only for endpoints a strategy that opted into http rendered.
	AllowHTTP bool
}

func (s Store) client(loc Location, creds Credentials) (*minio.Client, error) {
	if err := s.Policy.CheckURL(loc.Endpoint, s.AllowHTTP); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	u, err := url.Parse(loc.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	region := loc.Region
	if region == "" {
		region = defaultRegion
	}
	lookup := minio.BucketLookupDNS
	if loc.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
		Transport:    s.Policy.Transport(),
		// One attempt per call: the controller retries with backoff.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", loc.Endpoint, err)
	}
	return mc, nil
}

// Stat returns the object's size.
func (s Store) Stat(ctx context.Context, loc Location, creds Credentials) (int64, error) {
	mc, err := s.client(loc, creds)
	if err != nil {
		return 0, err
	}
	info, err := mc.StatObject(ctx, loc.Bucket, loc.Key, minio.StatObjectOptions{})
	if err != nil {
		return 0, classify(loc, err)
	}
	return info.Size, nil
}

// Open streams the object.
func (s Store) Open(ctx context.Context, loc Location, creds Credentials) (io.ReadCloser, error) {
	r, _, err := s.OpenInfo(ctx, loc, creds)
	return r, err
}

// Info is what the store says about an object: its size and the user
// metadata it was written with (keys without the x-amz-meta- prefix, as
// the server canonicalised them).
type Info struct {
	Size     int64
	Metadata map[string]string
}

// OpenInfo streams the object and returns its Info, read from the same
// response: the metadata belongs to the bytes being read.
func (s Store) OpenInfo(ctx context.Context, loc Location, creds Credentials) (io.ReadCloser, Info, error) {
	mc, err := s.client(loc, creds)
	if err != nil {
		return nil, Info{}, err
	}
	obj, err := mc.GetObject(ctx, loc.Bucket, loc.Key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, classify(loc, err)
	}
	// GetObject is lazy: the first Stat reports a missing object.
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, Info{}, classify(loc, err)
	}
	return &classifyingReader{obj: obj, loc: loc}, Info{Size: st.Size, Metadata: st.UserMetadata}, nil
}

// Put writes size bytes of body as the object, with user metadata meta,
// in one request (callers keep objects below the store's single-request
// limit). S3 replaces an object whole, so a reader sees the old object or
// the new one, never a mix.
func (s Store) Put(ctx context.Context, loc Location, creds Credentials, body io.Reader, size int64, meta map[string]string) error {
	mc, err := s.client(loc, creds)
	if err != nil {
		return err
	}
	_, err = mc.PutObject(ctx, loc.Bucket, loc.Key, body, size, minio.PutObjectOptions{
		UserMetadata: meta, ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return classify(loc, err)
	}
	return nil
}

// Delete removes the object; a missing object is already deleted (a
// missing bucket is an error: the location may be wrong).
func (s Store) Delete(ctx context.Context, loc Location, creds Credentials) error {
	mc, err := s.client(loc, creds)
	if err != nil {
		return err
	}
	err = mc.RemoveObject(ctx, loc.Bucket, loc.Key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(classify(loc, err), ErrNotFound) {
		return fmt.Errorf("delete %s: %w", loc, err)
	}
	return nil
}

func classify(loc Location, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound":
		return fmt.Errorf("%w: %s", ErrNotFound, loc)
	case minio.NoSuchBucket:
		return fmt.Errorf("%w: %s", ErrNoSuchBucket, loc)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return fmt.Errorf("%w: %s: %v", ErrAccessDenied, loc, err)
	}
	return fmt.Errorf("%s: %w", loc, err)
}

type classifyingReader struct {
	obj *minio.Object
	loc Location
}

func (r *classifyingReader) Read(p []byte) (int, error) {
	n, err := r.obj.Read(p)
	if err != nil && err != io.EOF {
		err = classify(r.loc, err)
	}
	return n, err
}

func (r *classifyingReader) Close() error { return r.obj.Close() }
