package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// benchShards is how many shards BenchmarkShards runs.
const benchShards = 3

// BenchmarkShards runs the driver as the chart does with shards: 3: three
// shard leaders, each its own process, and a standby for shard 1, over
// BENCH_SHARD_TENANTS tenants (3000) labelled by the chart's admission
// policy. One round of a BackupJob per tenant at once; when a third of
// them have ended, shard 1's leader is killed (SIGKILL) and its standby
// must take over. A fifth replica owns no tenant: its RSS is the part no
// shard divides. It reports each replica's RSS and CPU for the round,
// the jobs each finished (their sum must be the number of jobs: none done
// twice), and that every job ended Succeeded with one Backup.
func BenchmarkShards(b *testing.B) {
	g := NewWithT(b)
	ctx := context.Background()
	n := envInt("BENCH_SHARD_TENANTS", 3000)
	g.Expect(platform.InstallShardPolicy(ctx, fast, benchShards)).To(Succeed())
	tenants := createTenants(b, "sh", n)
	g.Eventually(platform.ShardLabelled(ctx, fast, tenants[0], "0")).WithTimeout(time.Minute).Should(Succeed())
	jobs := watchFinish(b, &backupsv1alpha1.BackupJob{}, backupJobEnded)

	elect := []string{"--shards=" + strconv.Itoa(benchShards), "--leader-elect=true",
		"--leader-election-namespace=" + testenv.DriverNamespace}
	names := []string{"shard-0", "shard-1", "shard-2", "shard-1-standby", "no-tenant"}
	drivers := make([]*driver, len(names))
	for i := range benchShards {
		drivers[i] = startDriver(b, append(elect, "--shard="+strconv.Itoa(i))...)
	}
	// The standby starts once shard 1's first replica leads.
	time.Sleep(3 * time.Second)
	drivers[3] = startDriver(b, append(elect, "--shard=1")...)
	// A replica that owns no tenant (shard 3 of 4: the policy labels for
	// 3) holds what no shard divides: the process itself, the cluster-
	// scoped classes and strategies, and every tenant's application.
	drivers[4] = startDriver(b, "--shards=4", "--shard=3", "--leader-elect=true",
		"--leader-election-namespace="+testenv.DriverNamespace)
	warm := createBackupJobs(b, tenants[:benchShards], "warm-up")
	jobs.await(b, warm, envDuration("BENCH_AWAIT", 2*time.Minute))

	before := make([]usage, len(drivers))
	for i, d := range drivers {
		before[i] = d.usage(b)
	}
	start := time.Now()
	created := createBackupJobs(b, tenants, "round")
	// Kill shard 1's leader when a third of the round has ended.
	killedAt, last, lastDone := time.Duration(0), usage{}, 0.0
	for killedAt == 0 {
		jobs.mu.Lock()
		ended := 0
		for k := range created {
			if _, ok := jobs.done[k]; ok {
				ended++
			}
		}
		jobs.mu.Unlock()
		if ended >= n/3 {
			last, lastDone = drivers[1].usage(b), backupsDone(b, drivers[1])
			g.Expect(drivers[1].cmd.Process.Kill()).To(Succeed())
			killedAt = time.Since(start)
			b.Logf("killed shard 1's leader at %s, %d of %d jobs ended", killedAt.Round(time.Millisecond), ended, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	jobs.await(b, created, envDuration("BENCH_AWAIT", 15*time.Minute))
	wall := time.Since(start)

	done := 0.0
	for i, d := range drivers {
		u, finished := last, lastDone
		if i != 1 {
			u, finished = d.usage(b), backupsDone(b, d)
		}
		done += finished
		b.Logf("%s: RSS %.0f MiB (RssAnon %.0f MiB, peak %.0f MiB), %.1f CPU-s this round, %.0f BackupJobs finished in all%s",
			names[i], mib(u.rss), mib(u.anon), mib(u.hwm), (u.cpu - before[i].cpu).Seconds(), finished,
			map[bool]string{true: " (until killed)"}[i == 1])
		b.ReportMetric(mib(u.rss), names[i]+"-RSS-MiB")
		b.ReportMetric(mib(u.anon), names[i]+"-RssAnon-MiB")
		b.ReportMetric((u.cpu - before[i].cpu).Seconds(), names[i]+"-CPU-s")
	}
	b.Logf("%d tenants, %d shards: the round took %s with shard 1's leader killed at %s", n, benchShards, wall.Round(time.Millisecond), killedAt.Round(time.Millisecond))
	b.ReportMetric(wall.Seconds(), "round-s")

	// Every job once: one Backup per tenant for the round, labelled with
	// its namespace's shard, and no more jobs finished than were made
	// (the killed leader's count is read just before it died, so the sum
	// can fall short by the jobs it finished in that instant, never over).
	var backups backupsv1alpha1.BackupList
	g.Expect(fast.List(ctx, &backups)).To(Succeed())
	perNS, perShard := map[string]int{}, map[string]int{}
	for _, bk := range backups.Items {
		perNS[bk.Namespace]++
		perShard[bk.Labels[shard.Label]]++
	}
	for _, ns := range tenants {
		want := 1
		if ns == tenants[0] || ns == tenants[1] || ns == tenants[2] {
			want = 2 // the warm-up's too
		}
		g.Expect(perNS[ns]).To(Equal(want), "Backups in %s", ns)
	}
	g.Expect(done).To(BeNumerically("<=", n+benchShards), "BackupJobs finished, summed over replicas")
	b.Logf("Backups per shard label: %v; BackupJobs finished summed over replicas: %.0f of %d", perShard, done, n+benchShards)
}

// backupsDone is how many BackupJobs d finished (etcd_backup_driver_backups_total).
func backupsDone(b *testing.B, d *driver) float64 {
	b.Helper()
	resp, err := http.Get(d.metrics)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "etcd_backup_driver_backups_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatal(fmt.Errorf("metrics: %q: %w", line, err))
		}
		sum += v
	}
	return sum
}
