package changereplay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changereplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/kubewrites"
)

// The time to restore to a point 10,000 changes after the base: a base
// taken after 5,000 writes, then 10,000 writes shaped like a Kubernetes
// control plane's (test/kubewrites) captured by the real capture step
// into an S3 server (the sandbox's, in this process). Each op is the
// restore Job's whole path to the snapshot at the point: read the
// chain's index and fetch the segments the target needs from S3,
// verifying each (changelog.Store.Fetch), then replay (verify again,
// restore the base into a scratch etcd, apply the 10,000 revisions,
// snapshot, put the leases' TTLs back). fetch-s/op is the first part.
func BenchmarkReplay10000(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	m, cli := changereplay.StartEtcd(ctx, b, filepath.Join(b.TempDir(), "live"), "")
	if err := kubewrites.Apply(ctx, cli, kubewrites.Writes(2, 5000)); err != nil {
		b.Fatal(err)
	}
	base, bs := changereplay.TakeBase(ctx, b, cli)
	c := startCapture(b, m.Spec.ClientURL, bs)
	if err := kubewrites.Apply(ctx, cli, kubewrites.Writes(3, 10_000)); err != nil {
		b.Fatal(err)
	}
	final := changereplay.RevisionOf(ctx, b, cli)
	c.stopAt(ctx, b, final)
	target := changelog.Target{Revision: final}
	var res changereplay.Result
	var fetching time.Duration
	ops, segments := 0, 0
	for b.Loop() {
		dir, err := os.MkdirTemp(b.TempDir(), "op")
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		idx, err := c.store.ReadIndex(ctx)
		if err != nil {
			b.Fatal(err)
		}
		chain, err := c.store.Fetch(ctx, idx, target.Want, dir)
		if err != nil {
			b.Fatal(err)
		}
		fetching += time.Since(t0)
		segments = len(chain.Segments)
		stored := make([]changelog.Stored, len(chain.Segments))
		for i, s := range chain.Segments {
			stored[i] = s.Stored
		}
		res, err = changereplay.Replay(ctx, changereplay.Input{Base: base, Index: idx, Segments: stored, Target: target,
			WorkDir: dir, Out: filepath.Join(dir, "replayed.db"), Limits: changelog.DefaultLimits})
		if err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		ops++
	}
	if res.Revisions != 10_000 {
		b.Fatalf("replayed %d revisions", res.Revisions)
	}
	b.ReportMetric(float64(res.Revisions), "changes/op")
	b.ReportMetric(fetching.Seconds()/float64(ops), "fetch-s/op")
	b.ReportMetric(float64(segments), "segments")
}
