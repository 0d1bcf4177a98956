package changereplay_test

// The real capture step's chains, for the tests of this package that
// replay them. They are an external test package: the capture imports the
// staging step, which imports this package (through pointreplay), so a
// test inside this package could not import the capture.

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	capturestep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/step"
)

var s3creds = s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}

// capturing runs the real capture step against the etcd into a chain of
// an S3 server; stop ends it as SIGTERM does, once the chain holds
// revision upTo.
type capturing struct {
	o      capture.Options
	store  changelog.Store
	cancel context.CancelFunc
	done   chan int
}

func startCapture(t testing.TB, etcdURL string, b changelog.Base) *capturing {
	t.Helper()
	srv, err := s3server.Start(t.TempDir(), s3creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	o := capture.Options{EtcdEndpoints: []string{etcdURL}, Endpoint: srv.URL, Bucket: "bkt", PathStyle: true,
		AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true, Prefix: "tenant-a/etcd", Base: b,
		SegmentInterval: time.Second, SegmentBytes: capture.MinSegmentBytes, TerminationLog: filepath.Join(t.TempDir(), "log")}
	policy, err := endpointpolicy.Parse(o.AllowedEndpointCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	c := &capturing{o: o, done: make(chan int, 1), store: changelog.Store{
		S3: s3object.Store{Policy: policy, AllowHTTP: true}, Creds: s3object.Credentials{AccessKeyID: s3creds.AccessKeyID, SecretAccessKey: s3creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: srv.URL, Bucket: "bkt", ForcePathStyle: true},
		Chain:  changelog.ChainPrefix(o.Prefix, b.Revision), Limits: changelog.DefaultLimits}}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	env := func(k string) string {
		return map[string]string{s3object.AccessKeyIDKey: s3creds.AccessKeyID, s3object.SecretAccessKeyKey: s3creds.SecretAccessKey}[k]
	}
	go func() { c.done <- capturestep.Main(ctx, o.Args(), env, io.Discard, io.Discard) }()
	t.Cleanup(func() { cancel(); <-c.done; c.done <- 0 })
	return c
}

// stopAt waits until the chain holds revision rev, stops the capture and
// fetches the whole chain into a folder.
func (c *capturing) stopAt(ctx context.Context, t testing.TB, rev int64) (changelog.Index, []changelog.Stored) {
	t.Helper()
	for {
		idx, err := c.store.ReadIndex(ctx)
		if err == nil && idx.Newest.Revision >= rev {
			break
		}
		if err != nil && !errors.Is(err, changelog.ErrNoIndex) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("revision %d never became durable", rev)
		case code := <-c.done:
			c.done <- code
			t.Fatalf("the capture ended (exit %d) before revision %d was durable", code, rev)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.cancel()
	if code := <-c.done; code != capture.ExitStopped {
		t.Fatalf("the capture exited %d", code)
	}
	c.done <- 0
	idx, err := c.store.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := c.store.Fetch(ctx, idx, func(changelog.Header) bool { return true }, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]changelog.Stored, len(chain.Segments))
	for i, s := range chain.Segments {
		stored[i] = s.Stored
	}
	return idx, stored
}
