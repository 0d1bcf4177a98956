package s3object

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
)

// Against a real S3 server: stat, stream-check and delete one object, and
// the policy stops the client before a request leaves.
func TestStoreAgainstS3(t *testing.T) {
	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	data := fakeSnapshot(2)
	up, err := minio.New(srv.URL[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""),
		BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.PutObject(ctx, "bkt", "t/etcd/s.db", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	allowed, _ := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	store := Store{Policy: allowed, AllowHTTP: true}
	loc := Location{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/s.db", ForcePathStyle: true}
	good := Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}

	if size, err := store.Stat(ctx, loc, good); err != nil || size != int64(len(data)) {
		t.Fatalf("Stat = %d, %v", size, err)
	}
	r, err := store.Open(ctx, loc, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckSnapshot(r, int64(len(data)), checksumOf(data)); err != nil {
		t.Fatalf("CheckSnapshot of the stored object: %v", err)
	}
	r.Close()

	missing := loc
	missing.Key = "t/etcd/none.db"
	if _, err := store.Stat(ctx, missing, good); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat of a missing object = %v", err)
	}
	if _, err := store.Open(ctx, missing, good); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing object = %v", err)
	}
	if _, err := store.Stat(ctx, loc, Credentials{AccessKeyID: "ak", SecretAccessKey: "wrong"}); !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Stat with wrong keys = %v", err)
	}
	if _, err := (Store{AllowHTTP: true}).Stat(ctx, loc, good); !errors.Is(err, ErrRefused) {
		t.Fatalf("Stat against loopback without an allowed range = %v", err)
	}
	if _, err := (Store{Policy: allowed}).Stat(ctx, loc, good); !errors.Is(err, ErrRefused) {
		t.Fatalf("Stat over http without the opt-in = %v", err)
	}

	if err := store.Delete(ctx, loc, good); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, loc, good); err != nil {
		t.Fatalf("deleting a deleted object: %v", err)
	}
	if _, err := store.Stat(ctx, loc, good); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat after delete = %v", err)
	}
}

// Put writes an object whole with its metadata, and OpenInfo returns the
// metadata with the bytes; a second Put replaces both.
func TestPutAndOpenInfoAgainstS3(t *testing.T) {
	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	allowed, _ := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	store := Store{Policy: allowed, AllowHTTP: true}
	loc := Location{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/changes/7/0.seg", ForcePathStyle: true}
	good := Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}

	for _, v := range []string{"first", "second, longer"} {
		if err := store.Put(ctx, loc, good, bytes.NewReader([]byte(v)), int64(len(v)), map[string]string{"Sha256": "s-" + v}); err != nil {
			t.Fatal(err)
		}
		r, info, err := store.OpenInfo(ctx, loc, good)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != v || info.Size != int64(len(v)) || info.Metadata["Sha256"] != "s-"+v {
			t.Fatalf("read %q, %+v; wrote %q", b, info, v)
		}
	}
	missing := loc
	missing.Key = "t/etcd/changes/7/1.seg"
	if _, _, err := store.OpenInfo(ctx, missing, good); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenInfo of a missing object = %v", err)
	}
	bad := Credentials{AccessKeyID: "ak", SecretAccessKey: "wrong"}
	if err := store.Put(ctx, loc, bad, bytes.NewReader([]byte("x")), 1, nil); !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Put with wrong keys = %v", err)
	}
}
