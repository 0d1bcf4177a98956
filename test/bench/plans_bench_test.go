package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plan"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// Round of schedule a Plan round covers, on the warped clock: from a little
// before 03:00 to a little after the last minute an H 3 * * * Plan can pick.
const (
	roundFrom = 2*time.Hour + 50*time.Minute
	roundTo   = 4*time.Hour + 2*time.Minute
)

// BenchmarkPlanSpread gives BENCH_PLANS tenants (1000) a Plan written
// "0 3 * * *" and lets it run, then a Plan written "H 3 * * *". The Plans
// are run by the driver's own Plan reconciler in the bench process, on a
// clock that goes BENCH_PLAN_SPEED (30) times faster than real time through
// 02:50-04:02 (a round takes about two and a half minutes; the first ten
// minutes let the scheduler read every Plan); the driver process runs
// the BackupJobs (its Plan controller is disabled) and the operator takes
// each snapshot in BENCH_OPERATOR_DELAY real time. For each round it
// reports the most BackupJobs and EtcdSnapshots unfinished at once, over
// how many minutes of the schedule the jobs were created, and the API
// server's CPU over the round: in all and over its busiest 5 s.
func BenchmarkPlanSpread(b *testing.B) {
	n := envInt("BENCH_PLANS", 1000)
	speed := float64(envInt("BENCH_PLAN_SPEED", 30))
	tenants := createTenants(b, "pl", n)
	flight := watchInFlight(b)
	startDriver(b, "--disable-controllers=plan")
	// The round's day is tomorrow or later, so every Plan exists before
	// its first run (runs before a Plan's creation are never started).
	day := time.Now().UTC().Add(24 * time.Hour).Truncate(24 * time.Hour)
	for _, round := range []struct{ name, cron string }{{"fixed", "0 3 * * *"}, {"spread", "H 3 * * *"}} {
		f := runPlans(b, tenants, round.name, round.cron, &warpClock{from: day.Add(roundFrom), speed: speed}, flight)
		b.Logf("%d Plans %q: BackupJobs scheduled in %d distinct minutes (at most %d in one), all done %s (real) after the first was created; "+
			"at once at most %d BackupJobs and %d EtcdSnapshots unfinished; "+
			"API server %.1f CPU-s over the round (%s real), %.2f cores over its busiest 5 s; etcd %.1f CPU-s",
			n, round.cron, f.minutes, f.busiest, f.drained.Round(100*time.Millisecond), f.peakJobs, f.peakSnapshots,
			f.apiCPU.Seconds(), f.wall.Round(time.Second), f.apiPeak, f.etcdCPU.Seconds())
		b.ReportMetric(float64(f.peakJobs), round.name+"-peak-backupjobs")
		b.ReportMetric(float64(f.peakSnapshots), round.name+"-peak-snapshots")
		b.ReportMetric(f.apiCPU.Seconds(), round.name+"-apiserver-CPU-s")
		b.ReportMetric(f.apiPeak, round.name+"-apiserver-peak-cores")
	}
}

// planRound is what one round of Plans measured.
type planRound struct {
	planFigures
	apiCPU, etcdCPU time.Duration
	apiPeak         float64
	wall            time.Duration
}

// runPlans creates a Plan named name with schedule cron in every tenant,
// runs them through the round on clk, waits for every BackupJob to
// succeed, and deletes the Plans.
func runPlans(b *testing.B, tenants []string, name, cron string, clk *warpClock, flight *inFlight) planRound {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	createAll(b, tenants, func(ns string) client.Object {
		return &backupsv1alpha1.Plan{
			// In warped time a slow start is late by thirty times its
			// real delay; the round is about load, not deadlines.
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Annotations: map[string]string{planpolicy.StartingDeadlineSeconds: "3600"}},
			Spec: backupsv1alpha1.PlanSpec{
				ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
				BackupClassName: platform.ClassName,
				Schedule:        backupsv1alpha1.PlanSchedule{Cron: cron},
			},
		}
	})
	mgr := newPlanScheduler(b, ctx, clk)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			panic(fmt.Sprintf("plan scheduler: %v", err))
		}
	}()
	defer func() {
		cancel()
		<-done
		parallel(b, tenants, func(ns string) error {
			return client.IgnoreNotFound(fast.Delete(context.Background(), &backupsv1alpha1.Plan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
		})
	}()
	// The caches' first lists are not part of the round.
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("plan scheduler: caches did not sync")
	}

	// The round: the clock starts at 02:50 and the measures with it.
	flight.reset()
	api0, etcd0 := childCPU("kube-apiserver"), childCPU("etcd")
	samples := sampleCPU(ctx, "kube-apiserver")
	start := time.Now()
	clk.start()
	end := clk.from.Add(roundTo - roundFrom)
	deadline := start.Add(clk.real(roundTo-roundFrom) + envDuration("BENCH_AWAIT", 10*time.Minute))
	for {
		succeeded := flight.figures(name).succeeded
		if succeeded >= len(tenants) && !clk.Now().Before(end) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("Plans %q: %d of %d BackupJobs succeeded by %s", name, succeeded, len(tenants), clk.Now().Format(time.TimeOnly))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var f planRound
	f.wall = time.Since(start)
	f.apiCPU, f.etcdCPU = childCPU("kube-apiserver")-api0, childCPU("etcd")-etcd0
	f.apiPeak = peakRate(samples(), 5*time.Second)
	f.planFigures = flight.figures(name)
	return f
}

// newPlanScheduler returns a manager that runs plan.Reconciler with clk.
// Its requeue delays, computed in warped time, are shortened to real time.
func newPlanScheduler(b *testing.B, ctx context.Context, clk *warpClock) ctrl.Manager {
	b.Helper()
	cfg := rest.CopyConfig(env.Config)
	// The driver's own client limits.
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 driverscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	r := &plan.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder(plan.ControllerName), Clock: clk,
		// Signs the Plans' records.
		Keys: provenance.StaticKeys{ActiveID: "bench", Keys: map[string][]byte{"bench": []byte(strings.Repeat("b", 32))}}}
	err = ctrl.NewControllerManagedBy(mgr).Named(plan.ControllerName).
		For(&backupsv1alpha1.Plan{}, builder.WithPredicates(planrecord.Changes())).Owns(&backupsv1alpha1.BackupJob{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(warped{r: r, clk: clk})
	if err != nil {
		b.Fatal(err)
	}
	// The reconciler reads BackupClasses through the cache: have that
	// informer synced before the round, not during it.
	for _, obj := range []client.Object{&backupsv1alpha1.BackupClass{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	return mgr
}

// warped runs the Plan reconciler and turns its requeue delay, a span of
// warped time, into real time.
type warped struct {
	r   reconcile.Reconciler
	clk *warpClock
}

func (w warped) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := w.r.Reconcile(ctx, req)
	if res.RequeueAfter > 0 {
		res.RequeueAfter = max(w.clk.real(res.RequeueAfter), time.Millisecond)
	}
	return res, err
}

// sampleCPU reads the CPU time of the bench's child process comm every
// second until ctx ends; the returned function gives the samples so far.
func sampleCPU(ctx context.Context, comm string) func() []cpuSample {
	var (
		mu      sync.Mutex
		samples []cpuSample
	)
	read := func() {
		s := cpuSample{at: time.Now(), cpu: childCPU(comm)}
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	}
	read()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() []cpuSample {
		read()
		mu.Lock()
		defer mu.Unlock()
		return append([]cpuSample(nil), samples...)
	}
}
