package s3server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
)

// As S3 does: a reader of an object being replaced gets the old object
// or the new one, whole, and an upload broken off leaves the old one.
func TestObjectsAreReplacedWhole(t *testing.T) {
	ctx := context.Background()
	creds := s3server.Credentials{AccessKeyID: "sandbox", SecretAccessKey: "sandbox-secret"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	c, err := objstore.New(objstore.Location{Endpoint: srv.URL, ForcePathStyle: true}, creds.AccessKeyID, creds.SecretAccessKey)
	if err != nil {
		t.Fatal(err)
	}
	versions := [][]byte{bytes.Repeat([]byte("a"), 1<<20), bytes.Repeat([]byte("b"), 3<<20)}
	put := func(v []byte) error {
		_, err := c.PutObject(ctx, "bkt", "index.json", bytes.NewReader(v), int64(len(v)), minio.PutObjectOptions{DisableMultipart: true})
		return err
	}
	if err := put(versions[0]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(versions[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 60 {
		obj, err := c.GetObject(ctx, "bkt", "index.json", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !(bytes.Equal(got, versions[0]) || bytes.Equal(got, versions[1])) {
			close(stop)
			wg.Wait()
			t.Fatalf("read %d bytes (%v) of an object being replaced: neither version whole", len(got), err)
		}
	}
	close(stop)
	wg.Wait()

	if err := put(versions[0]); err != nil {
		t.Fatal(err)
	}
	broken := io.MultiReader(bytes.NewReader(versions[1][:1<<20]), errReader{})
	if _, err := c.PutObject(ctx, "bkt", "index.json", broken, int64(len(versions[1])), minio.PutObjectOptions{DisableMultipart: true}); err == nil {
		t.Fatal("an upload broken off succeeded")
	}
	obj, err := c.GetObject(ctx, "bkt", "index.json", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, versions[0]) {
		t.Fatalf("after an upload broken off the object reads %d bytes (%v), want the old %d", len(got), err, len(versions[0]))
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("the uploader died") }
