package minio_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var server *testenv.MinIO

func TestMain(m *testing.M) {
	var err error
	server, err = testenv.StartMinIO()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = server.Stop()
	os.Exit(code)
}

const bucket = "backups"

func s3As(t *testing.T, key credbroker.Key) *minio.Client {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(server.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(key.AccessKeyID, key.SecretAccessKey, ""), Region: "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func root() credbroker.Key {
	return credbroker.Key{AccessKeyID: server.RootUser, SecretAccessKey: server.RootPassword}
}

func put(ctx context.Context, c *minio.Client, key, body string) error {
	_, err := c.PutObject(ctx, bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	return err
}

func get(ctx context.Context, c *minio.Client, key string) (string, error) {
	o, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return "", err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	return string(b), err
}

func list(ctx context.Context, c *minio.Client, prefix string) ([]string, error) {
	var keys []string
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		keys = append(keys, o.Key)
	}
	return keys, nil
}

func invalidKey(err error) bool {
	return err != nil && minio.ToErrorResponse(err).Code == "InvalidAccessKeyId"
}

func denied(err error) bool {
	return err != nil && minio.ToErrorResponse(err).Code == "AccessDenied"
}

func setup(t *testing.T, ctx context.Context) (*brokerminio.Provider, *minio.Client) {
	g := NewWithT(t)
	admin := s3As(t, root())
	if ok, _ := admin.BucketExists(ctx, bucket); !ok {
		g.Expect(admin.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})).To(Succeed())
	}
	p, err := brokerminio.New(server.Endpoint, root(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	return p, admin
}

// A tenant key reaches its own prefix for list, get and put, and the server
// refuses everything else: the other tenant's prefix (read, write, list,
// delete), the bucket's root listing, deletes in its own prefix, and the
// admin API.
func TestTenantKeyIsConfinedToItsPrefix(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p, admin := setup(t, ctx)
	now := time.Now()
	keyA, err := p.Issue(ctx, credbroker.OwnerOf("isolation", "alpha"), credbroker.Scope{Bucket: bucket, Prefix: "alpha/"}, now)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Issue(ctx, credbroker.OwnerOf("isolation", "alphabet"), credbroker.Scope{Bucket: bucket, Prefix: "alphabet/"}, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keyA.AccessKeyID).NotTo(Equal(server.RootUser))

	g.Expect(put(ctx, admin, "alpha/etcd/old.db", "alpha's")).To(Succeed())
	g.Expect(put(ctx, admin, "alphabet/etcd/snap.db", "alphabet's")).To(Succeed())

	a := s3As(t, keyA)
	// Its own prefix.
	g.Expect(put(ctx, a, "alpha/etcd/new.db", "fresh")).To(Succeed())
	g.Expect(get(ctx, a, "alpha/etcd/old.db")).To(Equal("alpha's"))
	g.Expect(list(ctx, a, "alpha/")).To(ConsistOf("alpha/etcd/old.db", "alpha/etcd/new.db"))

	// Another tenant's prefix, even one that starts with the same letters.
	_, err = get(ctx, a, "alphabet/etcd/snap.db")
	g.Expect(denied(err)).To(BeTrue(), "read of another tenant's snapshot: %v", err)
	g.Expect(denied(put(ctx, a, "alphabet/etcd/snap.db", "overwritten"))).To(BeTrue(), "overwrite of another tenant's snapshot")
	g.Expect(denied(put(ctx, a, "alphabet/etcd/planted.db", "planted"))).To(BeTrue(), "write into another tenant's prefix")
	_, err = list(ctx, a, "alphabet/")
	g.Expect(denied(err)).To(BeTrue(), "list of another tenant's prefix: %v", err)
	_, err = list(ctx, a, "")
	g.Expect(denied(err)).To(BeTrue(), "list of the whole bucket: %v", err)
	g.Expect(denied(a.RemoveObject(ctx, bucket, "alphabet/etcd/snap.db", minio.RemoveObjectOptions{}))).To(BeTrue(), "delete of another tenant's snapshot")
	// No delete in its own prefix either: deletions are the driver's.
	g.Expect(denied(a.RemoveObject(ctx, bucket, "alpha/etcd/old.db", minio.RemoveObjectOptions{}))).To(BeTrue(), "delete in its own prefix")
	// No bucket-level or admin action.
	g.Expect(denied(a.MakeBucket(ctx, "tenant-bucket", minio.MakeBucketOptions{}))).To(BeTrue(), "create a bucket")
	tenantAdmin, err := brokerminio.NewAdmin(server.Endpoint, keyA.AccessKeyID, keyA.SecretAccessKey, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tenantAdmin.AddServiceAccount(ctx, brokerminio.NewServiceAccount{Name: "escape"})
	g.Expect(brokerminio.IsAccessDenied(err)).To(BeTrue(), "a tenant key mints an unrestricted key: %v", err)
	_, err = tenantAdmin.ListServiceAccountsOf(ctx, server.RootUser)
	g.Expect(brokerminio.IsAccessDenied(err)).To(BeTrue(), "a tenant key lists the platform's keys: %v", err)
	// MinIO shows a service account its siblings' records (no secrets):
	// they must not say whose they are.
	siblings, err := tenantAdmin.ListServiceAccounts(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range siblings {
		g.Expect(s.Name+" "+s.Description).NotTo(ContainSubstring("alphabet"), "a tenant key learns another tenant's namespace")
	}

	// Nothing the tenant tried changed the other tenant's objects or its own.
	g.Expect(get(ctx, admin, "alphabet/etcd/snap.db")).To(Equal("alphabet's"))
	g.Expect(get(ctx, admin, "alpha/etcd/old.db")).To(Equal("alpha's"))
	g.Expect(list(ctx, admin, "alphabet/")).To(ConsistOf("alphabet/etcd/snap.db"))
}

// Keys are found again by group from MinIO's listing alone, under their
// owner's own user, with the issue time they were created with and the
// broker's mark; Inspect reads a key's own policy back, exactly the
// scope's; an expiry (at least 15 minutes ahead, MinIO's minimum) is sent
// with the policy, which the server keeps, and the key works until then;
// an update without the policy is refused before it is sent; a deleted key
// is refused and gone, and deleting it again is not an error; removing
// the owner removes its user and every key under it.
func TestListInspectExpireDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p, admin := setup(t, ctx)
	issued := time.Now().Add(-time.Hour).Truncate(time.Second)
	owner := credbroker.OwnerOf("listing", "gamma")
	scope := credbroker.Scope{Bucket: bucket, Prefix: "gamma/"}
	key, err := p.Issue(ctx, owner, scope, issued)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Issue(ctx, credbroker.OwnerOf("other", "delta"), credbroker.Scope{Bucket: bucket, Prefix: "delta/"}, issued)
	g.Expect(err).NotTo(HaveOccurred())

	holdings, err := p.List(ctx, owner.Group)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holdings).To(HaveLen(1))
	g.Expect(holdings[0].Owner.Name).To(Equal(owner.Name))
	ids := holdings[0].Keys
	g.Expect(ids).To(HaveLen(1))
	g.Expect(ids[0].AccessKeyID).To(Equal(key.AccessKeyID))
	g.Expect(ids[0].Parent).To(Equal(owner.Name), "the key's parent is not the owner's own user")
	g.Expect(ids[0].Brokered).To(BeTrue())
	g.Expect(ids[0].Inherits).To(BeFalse())
	g.Expect(ids[0].IssuedAt.Equal(issued)).To(BeTrue(), "issued %s, listed %s", issued, ids[0].IssuedAt)
	g.Expect(ids[0].Expires.IsZero()).To(BeTrue())
	inspected, err := p.Inspect(ctx, key.AccessKeyID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(credbroker.SamePolicy(inspected.Policy, credbroker.Policy(scope))).To(BeTrue(), "policy read back: %s", inspected.Policy)

	c := s3As(t, key)
	g.Expect(put(ctx, c, "gamma/x.db", "x")).To(Succeed())
	g.Expect(p.Expire(ctx, key.AccessKeyID, nil, time.Now().Add(time.Hour))).To(MatchError(brokerminio.ErrNoPolicy))
	g.Expect(p.Expire(ctx, key.AccessKeyID, []byte(`{"Version":"2012-10-17","Statement":[]}`), time.Now().Add(time.Hour))).To(MatchError(brokerminio.ErrNoPolicy))
	g.Expect(p.Expire(ctx, key.AccessKeyID, credbroker.Policy(scope), time.Now().Add(time.Second))).To(Succeed(), "an expiry sooner than MinIO's minimum is moved to it")
	holdings, err = p.List(ctx, owner.Group)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holdings[0].Keys[0].Expires).To(BeTemporally(">", time.Now().Add(15*time.Minute)))
	g.Expect(holdings[0].Keys[0].Inherits).To(BeFalse(), "the expiry dropped the key's own policy")
	inspected, err = p.Inspect(ctx, key.AccessKeyID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(credbroker.SamePolicy(inspected.Policy, credbroker.Policy(scope))).To(BeTrue(), "policy after the expiry: %s", inspected.Policy)
	g.Expect(put(ctx, c, "gamma/y.db", "y")).To(Succeed(), "the key works until it expires")

	g.Expect(p.Delete(ctx, key.AccessKeyID)).To(Succeed())
	g.Eventually(func() bool {
		return denied(put(ctx, c, "gamma/z.db", "z")) || invalidKey(put(ctx, c, "gamma/z.db", "z"))
	}).Should(BeTrue(), "a deleted key still writes")
	g.Expect(p.Delete(ctx, key.AccessKeyID)).To(Succeed())
	_, err = p.Inspect(ctx, key.AccessKeyID)
	g.Expect(err).To(MatchError(credbroker.ErrNoSuchKey))
	_, err = get(ctx, admin, "gamma/x.db")
	g.Expect(err).NotTo(HaveOccurred())

	again, err := p.Issue(ctx, owner, scope, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.RemoveOwner(ctx, owner.Name)).To(Succeed())
	g.Expect(p.RemoveOwner(ctx, owner.Name)).To(Succeed(), "removing an owner already gone")
	g.Expect(p.List(ctx, owner.Group)).To(BeEmpty())
	_, err = p.Inspect(ctx, again.AccessKeyID)
	g.Expect(err).To(MatchError(credbroker.ErrNoSuchKey), "a key outlived its owner")
}

// The server refuses the admin client signed with a wrong secret and
// answers it signed with the right one.
func TestServerRejectsWrongAdminKey(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bad, err := brokerminio.NewAdmin(server.Endpoint, server.RootUser, server.RootPassword+"x", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bad.ListServiceAccounts(ctx)
	g.Expect(err).To(HaveOccurred())
	good, err := brokerminio.NewAdmin(server.Endpoint, server.RootUser, server.RootPassword, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = good.ServerInfo(ctx)
	g.Expect(err).NotTo(HaveOccurred())
}
