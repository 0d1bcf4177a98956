package changereplay_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changereplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/kubewrites"
)

// The time to restore to a point 10,000 changes after the base: a base
// taken after 5,000 writes, then 10,000 writes shaped like a Kubernetes control
// plane's (test/kubewrites) captured by the real capture step; each op is
// one whole replay (verify the chain, restore the base into a scratch
// etcd, apply the 10,000 revisions, snapshot, put the leases' TTLs back).
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
	idx, stored := c.stopAt(ctx, b, final)
	dir := b.TempDir()
	var res changereplay.Result
	for b.Loop() {
		var err error
		res, err = changereplay.Replay(ctx, changereplay.Input{Base: base, Index: idx, Segments: stored, Target: changelog.Target{Revision: final},
			WorkDir: dir, Out: filepath.Join(dir, "replayed.db"), Limits: changelog.DefaultLimits})
		if err != nil {
			b.Fatal(err)
		}
	}
	if res.Revisions != 10_000 {
		b.Fatalf("replayed %d revisions", res.Revisions)
	}
	b.ReportMetric(float64(res.Revisions), "changes/op")
}
