package credbroker_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Objects the probes aim at, written with the root key: another tenant's
// snapshot in the same bucket and an object in a bucket no tenant uses.
const (
	victimKey   = "probe-victim/etcd/snapshot.db"
	otherBucket = "platform-private"
	privateKey  = "secrets.db"
)

// seedVictims writes the objects the probes aim at.
func (w *world) seedVictims() {
	root := s3As(rootKey())
	if ok, _ := root.BucketExists(w.ctx, otherBucket); !ok {
		w.g.Expect(root.MakeBucket(w.ctx, otherBucket, minio.MakeBucketOptions{})).To(Succeed())
	}
	w.g.Expect(put(w.ctx, root, victimKey)).To(Succeed())
	_, err := root.PutObject(w.ctx, otherBucket, privateKey, strings.NewReader("private"), 7, minio.PutObjectOptions{})
	w.g.Expect(err).NotTo(HaveOccurred())
}

// escapes tries, with a key handed to tenant ns, everything a tenant key
// must never do, and returns what the server allowed: get, put, list and
// delete outside the tenant's prefix, a list of the whole bucket, a read
// of another bucket, and admin calls (server info, minting a key, listing
// users and the platform's keys). Its own prefix is not probed. Keys it
// manages to mint are deleted again with the root key.
func (w *world) escapes(key s3object.Credentials, ns string) []string {
	w.seedVictims()
	ctx := w.ctx
	c := s3As(key)
	var got []string
	allowed := func(what string, err error) {
		if err == nil {
			got = append(got, what)
		}
	}
	_, err := getObject(ctx, c, bucket, victimKey)
	allowed("get another tenant's object", err)
	allowed("put into another tenant's prefix", put(ctx, c, "probe-victim/etcd/planted.db"))
	_, err = listObjects(ctx, c, bucket, "probe-victim/")
	allowed("list another tenant's prefix", err)
	_, err = listObjects(ctx, c, bucket, "")
	allowed("list the whole bucket", err)
	_, err = getObject(ctx, c, otherBucket, privateKey)
	allowed("get an object of another bucket", err)
	_, err = listObjects(ctx, c, otherBucket, "")
	allowed("list another bucket", err)
	allowed("delete another tenant's object", c.RemoveObject(ctx, bucket, victimKey, minio.RemoveObjectOptions{}))
	w.seedVictims()

	a, err := brokerminio.NewAdmin(server.Endpoint, key.AccessKeyID, key.SecretAccessKey, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	_, err = a.ServerInfo(ctx)
	allowed("admin: server info", err)
	_, err = a.ListServiceAccountsOf(ctx, server.RootUser)
	allowed("admin: list the root user's keys", err)
	_, err = a.ListServiceAccountsOf(ctx, w.platform.AccessKeyID)
	allowed("admin: list the platform credential's keys", err)
	_, err = a.ListUsers(ctx)
	allowed("admin: list users", err)
	minted, err := a.AddServiceAccount(ctx, brokerminio.NewServiceAccount{Name: "probe-minted"})
	allowed("admin: mint a key", err)
	if err == nil {
		root, rerr := brokerminio.NewAdmin(server.Endpoint, server.RootUser, server.RootPassword, nil)
		w.g.Expect(rerr).NotTo(HaveOccurred())
		w.g.Expect(root.DeleteServiceAccount(ctx, minted.AccessKey)).To(Succeed())
	}
	for i := range got {
		got[i] = fmt.Sprintf("%s (key %s of %s)", got[i], key.AccessKeyID, ns)
	}
	return got
}

// works reports whether key still writes its tenant's own prefix: a probe
// that finds no escape must not be fooled by a key that does nothing.
func (w *world) works(key s3object.Credentials, ns string) error {
	return put(w.ctx, s3As(key), ns+"/etcd/probe.db")
}

func getObject(ctx context.Context, c *minio.Client, bucket, key string) ([]byte, error) {
	o, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	buf := make([]byte, 64)
	n, err := o.Read(buf)
	if n > 0 {
		return buf[:n], nil
	}
	return nil, err
}

func listObjects(ctx context.Context, c *minio.Client, bucket, prefix string) ([]string, error) {
	var keys []string
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		keys = append(keys, o.Key)
	}
	return keys, nil
}
