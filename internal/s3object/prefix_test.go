package s3object

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

// DeleteUnder empties one folder a batch at a time and touches no key
// outside it, however much it looks like one inside.
func TestDeleteUnderEmptiesOneFolderOnly(t *testing.T) {
	// In memory: S3 keeps "x" and "x/y" side by side, which a file
	// backend (s3server's, MinIO's) cannot.
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4("ak", "sk", ""),
		BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err == nil {
		err = up.MakeBucket(ctx, "bkt", minio.MakeBucketOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	inside := []string{"t/etcd/changes/5/index.json", "t/etcd/changes/5/0000000000-6.seg", "t/etcd/changes/5/sub/x"}
	outside := []string{"t/etcd/changes/5", "t/etcd/changes/5x/index.json", "t/etcd/changes/50/index.json", "t/etcd/s.db", "u/etcd/changes/5/index.json"}
	for _, k := range append(slices.Clone(inside), outside...) {
		if _, err := up.PutObject(ctx, "bkt", k, bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	allowed, _ := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	store := Store{Policy: allowed, AllowHTTP: true}
	good := Credentials{AccessKeyID: "ak", SecretAccessKey: "sk"}
	loc := Location{Endpoint: srv.URL, Bucket: "bkt", Key: "t/etcd/changes/5/", ForcePathStyle: true}

	var found []int
	for range 4 {
		n, err := store.DeleteUnder(ctx, loc, good, 2)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, n)
	}
	if !slices.Equal(found, []int{2, 1, 0, 0}) {
		t.Fatalf("batches found %v, want [2 1 0 0]", found)
	}
	var left []string
	for obj := range up.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		left = append(left, obj.Key)
	}
	slices.Sort(left)
	want := slices.Sorted(slices.Values(outside))
	if !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}

	for _, bad := range []string{"t/etcd/changes/5", "/", ""} {
		l := loc
		l.Key = bad
		if _, err := store.DeleteUnder(ctx, l, good, 2); err == nil {
			t.Fatalf("DeleteUnder(%q) is not refused", bad)
		}
	}
	if _, err := (Store{AllowHTTP: true}).DeleteUnder(ctx, loc, good, 2); !errors.Is(err, ErrRefused) {
		t.Fatalf("DeleteUnder against loopback without an allowed range = %v", err)
	}
	if _, err := store.DeleteUnder(ctx, loc, good, MaxDeleteBatch+1); err == nil {
		t.Fatal("a batch above MaxDeleteBatch is not refused")
	}
}
